import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/** CRC-32C (Castagnoli), the checksum of Kafka's record batches and of iSCSI (RFC 3720). */
export function crc32c(bytes: Uint8Array): number {
  return nativeCrc32c(bytes) >>> 0;
}
