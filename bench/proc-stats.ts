/**
 * Reads a process's memory and CPU from /proc (Linux), for the benchmark's
 * memory and thundering-herd measurements, and samples them over time.
 */
import { readFileSync } from "node:fs";

/** Memory of a process, in MiB. */
export interface ProcessMemory {
  /** The resident set size now (VmRSS). */
  readonly rssMb: number;
  /** The peak resident set size (VmHWM). */
  readonly peakRssMb: number;
}

/** The clock ticks per second of /proc/PID/stat's CPU times (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** Reads VmRSS and VmHWM of `pid`; undefined when the process is gone. */
export function readMemory(pid: number): ProcessMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
    return match === null ? 0 : Number(match[1]);
  };
  return { rssMb: kb("VmRSS") / 1024, peakRssMb: kb("VmHWM") / 1024 };
}

/** Reads the user + system CPU time `pid` used so far, in seconds; undefined when it is gone. */
export function readCpuSeconds(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces; fields after its ")" are fixed.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / TICKS_PER_SECOND;
}

/** What a {@link ProcessSampler} saw. */
export interface ProcessSample {
  /** The highest CPU use over one sampling interval, in percent of one core. */
  readonly peakCpuPercent: number;
  /** The highest VmRSS sampled, in MiB. */
  readonly peakRssMb: number;
}

/** Samples a process's CPU and RSS every `intervalMs` until stopped. */
export interface ProcessSampler {
  /** Stops sampling and returns the peaks. */
  stop(): ProcessSample;
}

/** Starts sampling `pid` (CPU over each interval, RSS at each tick). */
export function sampleProcess(pid: number, intervalMs = 100): ProcessSampler {
  let peakCpuPercent = 0;
  let peakRssMb = readMemory(pid)?.rssMb ?? 0;
  let lastCpu = readCpuSeconds(pid) ?? 0;
  let lastAt = performance.now();
  const timer = setInterval(() => {
    const cpu = readCpuSeconds(pid);
    const memory = readMemory(pid);
    const at = performance.now();
    if (cpu !== undefined) {
      const percent = ((cpu - lastCpu) / ((at - lastAt) / 1_000)) * 100;
      peakCpuPercent = Math.max(peakCpuPercent, percent);
      lastCpu = cpu;
    }
    lastAt = at;
    if (memory !== undefined) peakRssMb = Math.max(peakRssMb, memory.rssMb);
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return { peakCpuPercent, peakRssMb };
    },
  };
}
