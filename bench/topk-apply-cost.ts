/**
 * What the top-k lists cost the apply path, repeatable (issue 27): `node
 * dist/bench/topk-apply-cost.js [--docs N] [--rounds R] [--body-spread W]` loads the search-topk
 * group's Zipf corpus (N documents, 1,000 a transaction, in this process through the serve-node's
 * Replica; with `--body-spread`, bodies of 100 - W to 100 + W words rather than all of 100, as
 * real documents vary: in documents of one length, impact order is document order)
 * into fresh stores without and with lists, alternating R times so a loaded machine slows both,
 * and prints the CPU time a document of each and their ratio (the target: 1.1).
 */
import { rmSync } from 'node:fs';
import { Command } from 'commander';
import { removeBenchDirs } from './references.js';
import { load, LISTS_DEFAULT, LISTS_NONE } from './search-topk.js';

async function loadOnce(docs: number, listedDfMin: number, spread: number): Promise<number> {
  const { replica, dir, cpuUsPerDoc } = load(docs, listedDfMin, spread);
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
  return cpuUsPerDoc;
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--docs <n>', 'Zipf documents to load', '30000')
    .option('--rounds <n>', 'loads of each kind', '3')
    .option('--body-spread <words>', 'bodies of 100 - W to 100 + W words', '0')
    .parse(process.argv)
    .opts<{ docs: string; rounds: string; bodySpread: string }>();
  const [docs, rounds, spread] = [Number(opts.docs), Number(opts.rounds), Number(opts.bodySpread)];
  const cpu = { without: [] as number[], with: [] as number[] };
  try {
    for (let round = 0; round < rounds; round++) {
      cpu.without.push(await loadOnce(docs, LISTS_NONE, spread));
      cpu.with.push(await loadOnce(docs, LISTS_DEFAULT, spread));
      const [without, withLists] = [cpu.without[round], cpu.with[round]];
      console.log(
        `round ${round}: ${docs} documents, CPU us a document without lists ${without}, ` +
          `with ${withLists}, ratio ${(withLists / without).toFixed(2)}`,
      );
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
    const [without, withLists] = [median(cpu.without), median(cpu.with)];
    console.log(
      `median: without lists ${without} us, with ${withLists} us, ratio ${(withLists / without).toFixed(2)}`,
    );
  } finally {
    removeBenchDirs();
  }
}

await main();
