/**
 * The node of the Service view's tree (what `service-model.ts` builds and
 * `service-tree.tsx` draws), and its two constructors. Pure.
 */

/** What a node is (its styling and its icon word). */
export type NodeKind =
  | "section"
  | "route"
  | "rule"
  | "match"
  | "filter"
  | "backend"
  | "policy"
  | "item";

/** A backend's weight and its share of its rule's total weight. */
export interface WeightBar {
  /** The backend's weight. */
  readonly weight: number;
  /** Its share of the rule's total in percent (0 to 100; 0 when the total is 0). */
  readonly percent: number;
  /** `80%`. */
  readonly label: string;
}

/** One node of the tree. */
export interface TreeNode {
  /** A path unique in the tree, stable across versions of the same shape. */
  readonly id: string;
  readonly kind: NodeKind;
  /** The node's words. */
  readonly label: string;
  /** Secondary words (shown muted); empty when none. */
  readonly detail: string;
  /** For a backend: its weight bar. */
  readonly bar?: WeightBar;
  readonly children: readonly TreeNode[];
}

/** A node without children. */
export function leaf(id: string, kind: NodeKind, label: string, detail = ""): TreeNode {
  return { id, kind, label, detail, children: [] };
}

/** A section node (`HTTP routes (2)`) holding `children`; undefined when there are none. */
export function section(id: string, title: string, children: TreeNode[]): TreeNode | undefined {
  if (children.length === 0) return undefined;
  return { id, kind: "section", label: `${title} (${children.length})`, detail: "", children };
}
