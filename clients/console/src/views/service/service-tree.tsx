/**
 * The projection's tree in the Service view: native `<details>`/`<summary>`
 * (keyboard usable: Tab to a branch, Enter or Space opens and closes it),
 * every branch open at first; a backend shows its weight as a bar whose
 * width is its share of the rule, with the percentage and the weight
 * written too. Keys are node ids, so branches keep their state across
 * versions.
 */
import type { TreeNode } from "./tree-node.js";

/** The weight bar of a backend node. */
export function WeightBarView({ node }: { node: TreeNode }) {
  if (node.bar === undefined) return null;
  return (
    <span class="weight">
      <span class="weight-bar" aria-hidden="true">
        <span class="weight-fill" style={{ width: `${node.bar.percent}%` }} />
      </span>
      <span class="weight-percent">{node.bar.label}</span>
    </span>
  );
}

function NodeLine({ node }: { node: TreeNode }) {
  return (
    <>
      <span class={`node-kind kind-${node.kind}`}>{node.kind === "section" ? "" : node.kind}</span>{" "}
      <span class={`node-label label-${node.kind}`}>{node.label}</span>
      {node.detail === "" ? null : <span class="node-detail muted"> {node.detail}</span>}
      <WeightBarView node={node} />
    </>
  );
}

/** One node: a `<details>` when it has children, a plain line otherwise. */
export function TreeItem({ node }: { node: TreeNode }) {
  if (node.children.length === 0) {
    return (
      <li class={`node node-${node.kind}`} data-node={node.id}>
        <NodeLine node={node} />
      </li>
    );
  }
  return (
    <li class={`node node-${node.kind}`} data-node={node.id}>
      <details open>
        <summary>
          <NodeLine node={node} />
        </summary>
        <ul>
          {node.children.map((child) => (
            <TreeItem key={child.id} node={child} />
          ))}
        </ul>
      </details>
    </li>
  );
}

/** The whole tree, or a line saying the projection is empty. */
export function ProjectionTree({ nodes }: { nodes: readonly TreeNode[] }) {
  if (nodes.length === 0) return <p class="muted">The projection carries no routes.</p>;
  return (
    <ul class="tree" aria-label="Projection">
      {nodes.map((node) => (
        <TreeItem key={node.id} node={node} />
      ))}
    </ul>
  );
}
