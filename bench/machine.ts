/** The machine a run measured, recorded beside every figure so results compare like with like. */
import { spawnSync } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  platform: string;
  kernel: string;
  /** The filesystem the data lives on, as findmnt names it. */
  dataFilesystem: string;
}

export function machineInfo(dataDir: string): MachineInfo {
  const fs = spawnSync('findmnt', ['-n', '-o', 'SOURCE,FSTYPE', '-T', dataDir], {
    encoding: 'utf8',
  });
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.version,
    platform: process.platform,
    kernel: release(),
    dataFilesystem: fs.status === 0 ? fs.stdout.trim().replace(/\s+/g, ' ') : 'unknown',
  };
}
