/**
 * The outgoing side of one pushed watch stream (`watch-push.ts`): what is
 * written at once and what waits. A change handed to a stream that is live
 * and whose transport takes more is written in the same synchronous call
 * that handed it (the cache's publish), with no queue, promise or task in
 * between; one that finds the stream still sending its initial sync, or its
 * transport full, waits in a backlog that is written, in order, when the
 * stream goes live or the transport drains.
 *
 * A frame counts as behind from the moment it is handed over until the
 * transport reports it written to the connection (HTTP/2 flow control holds
 * it back from a client that does not read): frames waiting here plus frames
 * written but not yet out. Past `maxBacklog` of them the outbox overflows and
 * the stream must end (its client resumes from the last revision it
 * applied). So a stalled client holds at most `maxBacklog` frames, wherever
 * they wait.
 *
 * Synchronous and free of timers; the transport is the `send` it is given,
 * and it reports each frame's completion, in order, by {@link Outbox.completed}.
 */

/** One frame for the stream, with the revision of the change it carries. */
export interface OutboxItem {
  /** The framed message. */
  readonly frame: Uint8Array;
  /** The revision of the change (UPSERT or DELETE) it carries; undefined for anything else. */
  readonly change: number | undefined;
}

/** What an outbox writes through: false when the transport took the frame but is full now. */
export type OutboxSend = (item: OutboxItem) => boolean;

/** See {@link createOutbox}. */
export interface Outbox {
  /**
   * Writes `items` now when the stream is live, the transport takes more
   * and nothing waits; else appends them to the backlog. Returns false when
   * the outbox overflowed (nothing more is written then).
   */
  push(items: readonly OutboxItem[]): boolean;
  /**
   * The initial sync is written: the stream goes live and writes its
   * backlog. `full` when the initial sync's last write found the transport
   * full (then the backlog waits for {@link Outbox.drained}).
   */
  goLive(full: boolean): void;
  /** The transport drained: writes the backlog until it is empty or the transport is full again. */
  drained(): void;
  /**
   * The transport wrote the oldest frame still out to the connection:
   * returns it (undefined when none was out).
   */
  completed(): OutboxItem | undefined;
  /**
   * Writes the whole backlog whatever the transport says (its buffer takes
   * what it cannot send yet): for a stream about to end, whose last frames
   * must not wait for a drain that its end makes moot.
   */
  flushAll(): void;
  /** Whether the initial sync is written ({@link Outbox.goLive} was called). */
  readonly live: boolean;
  /** Whether the stream is live, its transport takes more and nothing waits. */
  readonly idle: boolean;
  /** How many frames are behind: waiting here, or written and not yet out. */
  readonly behind: number;
  /** Whether the outbox overflowed. */
  readonly overflowed: boolean;
}

/** A FIFO of items over an array and a head index, compacted as it empties. */
class ItemQueue {
  private items: OutboxItem[] = [];
  private head = 0;
  get size(): number {
    return this.items.length - this.head;
  }
  add(item: OutboxItem): void {
    this.items.push(item);
  }
  take(): OutboxItem | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      // Most of the array is taken: drop that part rather than grow forever.
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

/**
 * Creates an outbox that writes through `send` and lets at most
 * `maxBacklog` frames be behind.
 */
export function createOutbox(send: OutboxSend, maxBacklog: number): Outbox {
  let live = false;
  let full = false;
  let overflowed = false;
  const backlog = new ItemQueue();
  const out = new ItemQueue();

  const write = (item: OutboxItem) => {
    out.add(item);
    if (!send(item)) full = true;
  };
  const flush = () => {
    while (!full && backlog.size > 0) write(backlog.take() as OutboxItem);
  };
  const overflow = () => {
    overflowed = true;
    backlog.clear();
    return false;
  };

  return {
    push(items) {
      if (overflowed) return false;
      let at = 0;
      if (live && backlog.size === 0) {
        while (!full && at < items.length) write(items[at++] as OutboxItem);
      }
      for (; at < items.length; at++) backlog.add(items[at] as OutboxItem);
      return backlog.size + out.size > maxBacklog ? overflow() : true;
    },
    goLive(fullNow) {
      live = true;
      full = fullNow;
      if (!overflowed) flush();
    },
    drained() {
      full = false;
      if (live && !overflowed) flush();
    },
    completed() {
      return out.take();
    },
    flushAll() {
      if (overflowed) return;
      while (backlog.size > 0) write(backlog.take() as OutboxItem);
    },
    get live() {
      return live;
    },
    get idle() {
      return live && !full && backlog.size === 0;
    },
    get behind() {
      return backlog.size + out.size;
    },
    get overflowed() {
      return overflowed;
    },
  };
}
