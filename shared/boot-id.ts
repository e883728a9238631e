/**
 * Linux's boot id: it changes at every boot, so a file that names it tells whether it was written
 * before the last restart of the machine (the serve-node's unflushed marker, the data-directory
 * lock). Read once: it cannot change while this process runs.
 */
import fs from 'node:fs';

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';
let bootId: string | null | undefined;

/** This boot's id, or null where the system does not tell it. */
export function currentBootId(): string | null {
  if (bootId === undefined) {
    try {
      bootId = fs.readFileSync(BOOT_ID_FILE, 'utf8').trim() || null;
    } catch {
      bootId = null;
    }
  }
  return bootId;
}
