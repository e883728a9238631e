/**
 * `npm run bench [-- GROUP...] [--quick] [--peers]`: measures the machine's references, runs
 * each workload group against real processes it starts, and writes the terminal table,
 * bench/results/<date>.json and an SVG chart. A skipped workload (a peer not installed) does not
 * fail the run; a workload that ran and failed does.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { renderChart } from './chart.js';
import { runEmbeddedBench } from './embedded.js';
import { runFiltersBench } from './filters.js';
import { runGatewayBench } from './gateway.js';
import { runSearchTopkBench } from './search-topk.js';
import { runServeBench } from './serve.js';
import { runViewsBench } from './views.js';
import { loadCorpus } from './corpus.js';
import { runKafkaBench } from './kafka.js';
import { runLogBench } from './log.js';
import { runScaleBench, SCALE_MAX_DEFAULT, scaleSizes } from './scale.js';
import { loadClient } from './load.js';
import { machineInfo } from './machine.js';
import { normalizeGroup } from './normalize.js';
import { RESULTS_DIR } from './paths.js';
import { runCoresBench } from './cores.js';
import { describePeers, detectPeers } from './peers.js';
import { addPeerRatios, runPeersBench } from './peers-group.js';
import { killRunningServers } from './processes.js';
import { benchDataRoot, measureReferences, removeBenchDirs } from './references.js';
import { cpuTable, referenceTable, workloadTable } from './table.js';
import type { BenchOptions, References, WorkloadResult } from './types.js';

const GROUP_TIME_MS_MAX = 240_000;
/** The cores group loads up to 10^6 documents (TAILBASE_BENCH_CORES_DOCS) before it measures. */
const CORES_TIME_MS_MAX = 1_800_000;
const GROUP_TIME_MS_MAX_QUICK = 40_000;
/**
 * cores starts five read configurations one after another, each measured for GET and search
 * from one client and from 16: 43 s quick on a quiet two-core machine (the 40 s default failed).
 */
const CORES_TIME_MS_MAX_QUICK = 120_000;
/**
 * gateway starts a log-node, two serve-nodes and a gateway over Kafka, loads the corpus, then a
 * third serve-node for the skew: 36 s quick on a loaded two-core machine.
 */
const GATEWAY_TIME_MS_MAX_QUICK = 90_000;
/** search-topk loads 10^5 documents twice and 10^6 once, in this process. */
const SEARCH_TOPK_TIME_MS_MAX = 1_200_000;
/** filters loads the corpus four times, into tailbase and then into PostgreSQL. */
const FILTERS_TIME_MS_MAX = 420_000;
/** scale loads each size twice (tailbase, PostgreSQL) and replays it three times: per document. */
const SCALE_TIME_MS_PER_DOC_MAX = 4;
const SCALE_TIME_MS_MAX_QUICK = 120_000;

/** views loads 10^5 source documents three times, then PostgreSQL once. */
const VIEWS_TIME_MS_MAX = 900_000;

interface GroupContext extends BenchOptions {
  references: References;
  /** Where results go (a group that writes files of its own). */
  out: string;
  /** The scale and search-topk groups' largest size, documents. */
  scaleMax: number;
  scaleMin: number;
}

interface Group {
  name: string;
  /** Past this a full run of the group fails (default GROUP_TIME_MS_MAX). */
  timeMsMax?: number | ((context: GroupContext) => number);
  /** Past this a quick run of the group fails (default GROUP_TIME_MS_MAX_QUICK). */
  quickTimeMsMax?: number;
  /** Left out of a full run of every group (it takes far longer than the rest): named only. */
  fullRunOnlyWhenNamed?: boolean;
  run(context: GroupContext): Promise<WorkloadResult[]>;
}

const GROUPS: Group[] = [
  { name: 'log', run: (context) => runLogBench(context, context.references) },
  { name: 'serve', run: async (context) => normalizeGroup('serve', await runServeBench(context)) },
  {
    name: 'embedded',
    run: async (context) => normalizeGroup('embedded', await runEmbeddedBench(context)),
  },
  {
    name: 'gateway',
    quickTimeMsMax: GATEWAY_TIME_MS_MAX_QUICK,
    run: async (context) => normalizeGroup('gateway', await runGatewayBench(context)),
  },
  { name: 'filters', timeMsMax: FILTERS_TIME_MS_MAX, run: (context) => runFiltersBench(context) },
  {
    name: 'search-topk',
    timeMsMax: SEARCH_TOPK_TIME_MS_MAX,
    run: (context) => runSearchTopkBench({ ...context, docsMax: context.scaleMax }),
  },
  { name: 'kafka', run: (context) => runKafkaBench(context, context.references) },
  { name: 'peers', run: (context) => runPeersBench(context) },
  {
    name: 'cores',
    timeMsMax: CORES_TIME_MS_MAX,
    quickTimeMsMax: CORES_TIME_MS_MAX_QUICK,
    run: (context) => runCoresBench(context),
  },
  {
    name: 'scale',
    timeMsMax: (context) =>
      scaleSizes(false, context.scaleMax, context.scaleMin).reduce((sum, n) => sum + n, 0) *
      SCALE_TIME_MS_PER_DOC_MAX,
    fullRunOnlyWhenNamed: true,
    quickTimeMsMax: SCALE_TIME_MS_MAX_QUICK,
    run: (context) => runScaleBench(context),
  },
  { name: 'views', timeMsMax: VIEWS_TIME_MS_MAX, run: (context) => runViewsBench(context) },
];

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} exceeded ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function runGroup(group: Group, context: GroupContext): Promise<WorkloadResult[]> {
  const started = Date.now();
  process.stdout.write(`running ${group.name}...\n`);
  try {
    const full = typeof group.timeMsMax === 'function' ? group.timeMsMax(context) : group.timeMsMax;
    const limit = context.quick
      ? (group.quickTimeMsMax ?? GROUP_TIME_MS_MAX_QUICK)
      : (full ?? GROUP_TIME_MS_MAX);
    const results = await withTimeout(group.run(context), limit, `group ${group.name}`);
    process.stdout.write(
      `  ${group.name} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    return results;
  } catch (error) {
    // Groups run one at a time: what still runs is this group's, and would load the next one.
    killRunningServers();
    const message = error instanceof Error ? error.message : String(error);
    return [
      {
        group: group.name,
        name: group.name,
        description: '',
        figures: {},
        ratios: [],
        peakRssBytes: {},
        error: message.split('\n')[0],
      },
    ];
  }
}

function stamp(date: Date, quick: boolean): string {
  return date.toISOString().slice(0, 19).replace(/:/g, '-') + (quick ? '-quick' : '');
}

async function main(): Promise<number> {
  const program = new Command()
    .name('bench')
    .description('tailbase benchmarks against this machine and its peers')
    .argument(
      '[groups...]',
      `workload groups: ${GROUPS.map((g) => g.name).join(', ')} (default: all)`,
    )
    .option('--quick', 'run every workload for a second or two (checks they run, not how fast)')
    .option('--peers', 'report which peer databases are installed and how to install the rest')
    .option('--out <dir>', 'where results go', RESULTS_DIR)
    .option(
      '--scale-max <documents>',
      "the scale and search-topk groups' largest size (1e7 adds ten million documents)",
      String(SCALE_MAX_DEFAULT),
    )
    .option(
      '--scale-min <documents>',
      "the scale group's smallest size (1e7 with --scale-max 1e7 runs ten million alone)",
      '1e4',
    )
    .parse(process.argv);
  const opts = program.opts<{
    quick?: boolean;
    peers?: boolean;
    out: string;
    scaleMax: string;
    scaleMin: string;
  }>();
  const scaleMax = Number(opts.scaleMax);
  if (!Number.isFinite(scaleMax) || scaleMax < 1e4) {
    console.error(
      `--scale-max must be a number of documents of at least 1e4, not ${opts.scaleMax}`,
    );
    return 2;
  }
  const scaleMin = Number(opts.scaleMin);
  if (!Number.isFinite(scaleMin) || scaleMin < 1e4 || scaleMin > scaleMax) {
    console.error(
      `--scale-min must be a number of documents from 1e4 to --scale-max, not ${opts.scaleMin}`,
    );
    return 2;
  }
  const quick = opts.quick === true;

  if (opts.peers) {
    console.log(`peers:\n${describePeers(detectPeers())}`);
    return 0;
  }
  const everyGroup = GROUPS.filter((g) => quick || g.fullRunOnlyWhenNamed !== true);
  const names = program.args.length > 0 ? program.args : everyGroup.map((g) => g.name);
  const unknown = names.filter((n) => !GROUPS.some((g) => g.name === n));
  if (unknown.length > 0) {
    console.error(
      `unknown group(s): ${unknown.join(', ')}; known: ${GROUPS.map((g) => g.name).join(', ')}`,
    );
    return 2;
  }

  const started = new Date();
  const machine = machineInfo(benchDataRoot());
  console.log(
    `machine: ${machine.cores} cores, ${(machine.memoryBytes / 2 ** 30).toFixed(1)} GiB, node ${machine.node}, ` +
      `data on ${machine.dataFilesystem}; load client: ${loadClient()}${quick ? '; quick run' : ''}`,
  );
  console.log('measuring references...');
  const references = await measureReferences({ quick });
  const corpus = await loadCorpus();
  const context: GroupContext = { quick, references, out: opts.out, scaleMax, scaleMin };
  const workloads: WorkloadResult[] = [];
  for (const group of GROUPS.filter((g) => names.includes(g.name))) {
    workloads.push(...(await runGroup(group, context)));
  }
  addPeerRatios(workloads);
  const peers = detectPeers();

  console.log(`\n${referenceTable(references)}\n`);
  console.log(`${workloadTable(workloads)}\n`);
  const cpu = cpuTable(workloads);
  if (cpu !== null) console.log(`${cpu}\n`);
  console.log(`corpus: ${corpus.docs.length} documents, ${corpus.bytes} bytes (${corpus.file})`);

  mkdirSync(opts.out, { recursive: true });
  const name = stamp(started, quick);
  const results = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    quick,
    machine,
    loadClient: loadClient(),
    references,
    corpus: { documents: corpus.docs.length, bytes: corpus.bytes },
    peers: peers.map((p) => ({ name: p.name, installed: p.binary !== null })),
    workloads,
  };
  const json = JSON.stringify(results, null, 2) + '\n';
  const title = `tailbase bench ${started.toISOString().slice(0, 10)}: ${machine.cores} cores, node ${machine.node}${quick ? ' (quick)' : ''}`;
  const svg = renderChart(title, workloads, references);
  writeFileSync(join(opts.out, `${name}.json`), json);
  writeFileSync(join(opts.out, `${name}.svg`), svg);
  // latest.* is the README's chart of a full run: a quick run or a run of some groups is not one.
  if (!quick && names.length === everyGroup.length) {
    writeFileSync(join(opts.out, 'latest.json'), json);
    writeFileSync(join(opts.out, 'latest.svg'), svg);
  }
  console.log(`results: ${join(opts.out, `${name}.json`)} and .svg`);
  const failed = workloads.filter((w) => w.error !== undefined);
  for (const w of failed) console.error(`FAILED ${w.group}/${w.name}: ${w.error}`);
  return failed.length > 0 ? 1 : 0;
}

// Exit explicitly: a group that timed out may still hold sockets or timers open. Its servers and
// directories are removed first, since its own cleanup never runs.
const exit = (code: number) => {
  killRunningServers();
  removeBenchDirs();
  process.exit(code);
};
main().then(exit, (error: unknown) => {
  console.error(error);
  exit(1);
});
