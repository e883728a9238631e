/**
 * The topics of a data directory: `topics/<topic>/topic.json` ({name, partitions, configs}) beside
 * the topic's partition directories, written atomically when the topic is created and when its
 * configs change. A topic directory without its topic.json (a crash while creating it) holds
 * nothing: its partitions are created only after the file is durable.
 *
 * A dropped topic's directory is renamed out of `topics/` (into `dropped/`, removed from there at
 * once and again at start), after `dropped-topics.json` records the topic's next incarnation
 * durably: a collection created again under the name starts as a new incarnation, which tokens
 * tell apart from the old one (shared/token.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir, mkdirDurable, writeFileAtomic } from '../shared/durable-files.js';
import { type FileIO, isErrno } from '../shared/file-io.js';
import type { TopicInfo } from '../shared/topics.js';

export const TOPICS_DIR = 'topics';
const TOPIC_FILE = 'topic.json';
const DROPPED_DIR = 'dropped';
const DROPPED_FILE = 'dropped-topics.json';

export function topicDir(dataDir: string, topic: string): string {
  return path.join(dataDir, TOPICS_DIR, topic);
}

export function partitionDir(dataDir: string, topic: string, partition: number): string {
  return path.join(topicDir(dataDir, topic), String(partition));
}

/** Every topic whose topic.json is written; a file that does not parse stops the node. */
export function readTopics(io: FileIO, dataDir: string): TopicInfo[] {
  const root = path.join(dataDir, TOPICS_DIR);
  if (!io.exists(root)) return [];
  const topics: TopicInfo[] = [];
  for (const name of io.readdir(root).sort()) {
    const file = path.join(root, name, TOPIC_FILE);
    let text: string;
    try {
      text = io.readFile(file).toString('utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) continue;
      throw error;
    }
    try {
      topics.push(JSON.parse(text) as TopicInfo);
    } catch (error) {
      throw new Error(`${file} is unreadable: ${(error as Error).message}`);
    }
  }
  return topics;
}

/**
 * Writes a topic's topic.json crash-safely, its directory (and `topics/` itself, the first time)
 * made durable first. A new topic's partition directories (`newPartitions`) are made beside it
 * before the file: the directory fsync that makes topic.json durable makes them durable too, at
 * no fsync of their own, and they hold nothing until it is.
 */
export function writeTopic(
  io: FileIO,
  dataDir: string,
  topic: TopicInfo,
  newPartitions: readonly number[] = [],
): void {
  const dir = topicDir(dataDir, topic.name);
  mkdirDurable(dir, io);
  for (const p of newPartitions) {
    const partition = partitionDir(dataDir, topic.name, p);
    if (!io.exists(partition)) io.mkdir(partition);
  }
  writeFileAtomic(
    path.join(dir, TOPIC_FILE),
    Buffer.from(
      JSON.stringify(
        {
          name: topic.name,
          partitions: topic.partitions,
          configs: topic.configs,
          ...(topic.incarnation ? { incarnation: topic.incarnation } : {}),
        },
        null,
        2,
      ),
    ),
    io,
  );
}

/** Topic name → the incarnation a topic created under it next gets (names never dropped: 0). */
export function readDroppedTopics(io: FileIO, dataDir: string): Map<string, number> {
  const file = path.join(dataDir, DROPPED_FILE);
  if (!io.exists(file)) return new Map();
  const parsed = JSON.parse(io.readFile(file).toString('utf8')) as Record<string, number>;
  return new Map(Object.entries(parsed));
}

/**
 * Drops a topic's files: its next incarnation is made durable first, then its directory leaves
 * `topics/` in one rename (so a crash leaves it whole, or gone), and is removed.
 */
export function dropTopicFiles(
  io: FileIO,
  dataDir: string,
  name: string,
  dropped: ReadonlyMap<string, number>,
): void {
  writeFileAtomic(
    path.join(dataDir, DROPPED_FILE),
    Buffer.from(JSON.stringify(Object.fromEntries(dropped), null, 2)),
    io,
  );
  const trash = path.join(dataDir, DROPPED_DIR);
  mkdirDurable(trash, io);
  const target = path.join(trash, `${name}-${dropped.get(name)}`);
  io.rename(topicDir(dataDir, name), target);
  fsyncDir(path.join(dataDir, TOPICS_DIR), io);
  fsyncDir(trash, io);
}

/** Removes what dropped topics left (their renamed directories); nothing there is read. */
export function removeDroppedFiles(dataDir: string): void {
  fs.rmSync(path.join(dataDir, DROPPED_DIR), { recursive: true, force: true });
}
