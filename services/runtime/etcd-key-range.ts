/**
 * etcd key ranges: the range end that makes a range cover every key starting
 * with a prefix (what etcd's `--prefix` sends), for reads, watches and role
 * permissions alike.
 */

const ZERO = Buffer.from([0]);

/**
 * Returns the end of the key range of every key starting with `keyPrefix`:
 * the prefix with its last byte below 0xff incremented (and what follows it
 * dropped), or `\0` (every key from the start on) when there is none.
 */
export function prefixEnd(keyPrefix: string): Buffer {
  const end = Buffer.from(keyPrefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return ZERO;
}
