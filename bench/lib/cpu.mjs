// CPU time accounting on Linux via /proc (null elsewhere): how many cores a side kept
// busy during a measurement, to tell CPU-bound from I/O- or contention-bound runs.
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Fields after the `(comm)` of /proc/<pid>/stat, 1-based as in proc(5) (field 3 = state). */
const statFields = (pid) => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
};

/** CPU seconds of a live process (user + system), or null. */
export const processCpuSeconds = (pid) => {
  const f = statFields(pid);
  return f === null ? null : (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND;
};

/** CPU seconds of this process's terminated, waited-for children (and theirs), or null. */
export const childrenCpuSeconds = () => {
  const f = statFields("self");
  return f === null ? null : (Number(f[13]) + Number(f[14])) / TICKS_PER_SECOND;
};

/** CPU seconds of this process (user + system). */
export const selfCpuSeconds = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

/**
 * CPU seconds all cores of the machine have spent busy since boot (every /proc/stat
 * field but idle and iowait), or null off Linux. Over a quiet machine's measurement
 * this is the whole cost of the workload, whichever processes it ran in.
 */
export const machineBusySeconds = () => {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal (guest time is inside user).
    const [user, nice, system, , , irq, softirq, steal] = fields.slice(1, 9).map(Number);
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
};
