/**
 * Writes that must survive a power loss whole or not at all: a directory entry made durable, and
 * a whole file replaced crash-safely (written under a temporary name, fsynced, renamed into place).
 * Each goes through a FileIO (shared/file-io.ts), node:fs unless the caller passes another.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type FileIO, nodeFileIO, writeAll } from './file-io.js';

/** A file being written under its final name plus this suffix; never read, deleted on recovery. */
export const TEMP_SUFFIX = '.tmp';

const { O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY } = fs.constants;

/** Flushes a file's (or a directory's) written pages, whoever wrote them. */
export function fsyncPath(file: string, io: FileIO = nodeFileIO): void {
  const fd = io.open(file, O_RDONLY);
  try {
    io.fsync(fd);
  } finally {
    io.close(fd);
  }
}

/** Makes a rename or unlink in `dir` durable. */
export function fsyncDir(dir: string, io: FileIO = nodeFileIO): void {
  io.fsyncDir(dir);
}

/**
 * Creates a directory and its missing parents, each made durable in its parent (a new directory
 * is an entry in its parent, lost at a power cut until the parent is fsynced). Nothing is
 * synced when the directory already exists.
 */
export function mkdirDurable(dir: string, io: FileIO = nodeFileIO): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); !io.exists(at); at = path.dirname(at)) missing.push(at);
  if (missing.length === 0) return;
  io.mkdir(dir);
  for (const created of missing.reverse()) io.fsyncDir(path.dirname(created));
}

/** Writes a whole file crash-safely: temporary name, fsync, rename, fsync of the directory. */
export function writeFileAtomic(file: string, bytes: Uint8Array, io: FileIO = nodeFileIO): void {
  const temp = file + TEMP_SUFFIX;
  const fd = io.open(temp, O_WRONLY | O_CREAT | O_TRUNC);
  try {
    writeAll(io, fd, bytes, 0);
    io.fsync(fd);
  } finally {
    io.close(fd);
  }
  io.rename(temp, file);
  io.fsyncDir(path.dirname(file));
}
