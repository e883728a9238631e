/**
 * Where a serve-node keeps its stores: DATA/node.json (its id, kept across rebuilds) and
 * DATA/stores-<generation>/ (docs.mdb, search.sqlite). A rebuild opens the next generation empty
 * and deletes the old one, so a crash mid-rebuild restarts from an empty generation, never from a
 * half-wiped one. Snapshots are copies of one generation plus snapshot.json.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ulid } from 'ulid';
import { mkdirDurable, writeFileAtomic } from '../shared/durable-files.js';
import { DOCS_FILE } from './doc-store.js';
import { SEARCH_FILE } from './search-store.js';

const GENERATION = /^stores-(\d+)$/;
export const SNAPSHOT_MANIFEST = 'snapshot.json';

export function loadOrCreateNodeId(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'node.json');
  if (existsSync(path))
    return (JSON.parse(readFileSync(path, 'utf8')) as { nodeId: string }).nodeId;
  const nodeId = `serve-${ulid()}`;
  // Durable before any store is: a power cut must not leave an empty node.json behind.
  writeFileAtomic(path, Buffer.from(JSON.stringify({ nodeId }) + '\n'));
  return nodeId;
}

export function generationDir(dataDir: string, generation: number): string {
  return join(dataDir, `stores-${generation}`);
}

/** The newest generation (older ones, left by a crash mid-rebuild, are removed); 0 if none. */
export function currentGeneration(dataDir: string): number {
  const generations = readdirSync(dataDir)
    .map((name) => GENERATION.exec(name))
    .filter((match) => match !== null)
    .map((match) => Number(match[1]))
    .sort((a, b) => a - b);
  const newest = generations.pop() ?? 0;
  for (const old of generations) removeGeneration(dataDir, old);
  return newest;
}

export function createGeneration(dataDir: string, generation: number): string {
  const dir = generationDir(dataDir, generation);
  mkdirDurable(dir);
  return dir;
}

export function removeGeneration(dataDir: string, generation: number): void {
  rmSync(generationDir(dataDir, generation), { recursive: true, force: true });
}

/** Seeds an empty generation directory with a snapshot's store files. */
export function seedFromSnapshot(snapshotDir: string, dir: string): void {
  if (!existsSync(join(snapshotDir, SNAPSHOT_MANIFEST))) {
    throw new Error(`${snapshotDir} is not a serve-node snapshot (no ${SNAPSHOT_MANIFEST})`);
  }
  for (const file of [DOCS_FILE, SEARCH_FILE]) {
    copyFileSync(join(snapshotDir, file), join(dir, file));
  }
}
