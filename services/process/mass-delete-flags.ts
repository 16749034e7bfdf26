/**
 * The flags of the mass-deletion guard, shared by the registrar and the agent:
 * `--mass-delete-threshold PERCENT|off` and `--mass-delete-min N`. Each
 * problem is a {@link UsageError} that names the flag.
 */
import type { MassDeleteThreshold } from "../common/import-loss.js";
import { UsageError } from "./usage-error.js";

const PERCENT = /^(\d{1,3}(?:\.\d+)?)%$/;
const COUNT = /^\d{1,9}$/;

/**
 * Parses `--mass-delete-threshold` (a percentage in [0%, 100%], where 100%
 * and `off` turn the guard off) and `--mass-delete-min` (a whole number, at
 * least 1) into a threshold.
 */
export function parseMassDeleteFlags(threshold: string, min: string): MassDeleteThreshold {
  let fraction: number;
  if (threshold === "off") fraction = 1;
  else {
    const match = PERCENT.exec(threshold);
    const percent = match === null ? Number.NaN : Number(match[1]);
    if (!(percent >= 0 && percent <= 100)) {
      throw new UsageError(
        `--mass-delete-threshold ${JSON.stringify(threshold)} must be a percentage from 0% to 100% (for example 50%), or off`,
      );
    }
    fraction = percent / 100;
  }
  const minCount = COUNT.test(min) ? Number(min) : Number.NaN;
  if (!(minCount >= 1)) {
    throw new UsageError(
      `--mass-delete-min ${JSON.stringify(min)} must be a whole number, at least 1`,
    );
  }
  return { fraction, minCount };
}
