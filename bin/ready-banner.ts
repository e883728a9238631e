/**
 * What `tailbase start` prints on stdout once it serves: the first line is the one scripts and
 * tests read (`tailbase is ready: URL  Kafka: HOST:PORT  (data in DIR)`), the lines after it tell
 * a person where each face of the database is.
 */
export interface ReadyFacts {
  url: string;
  host: string;
  /** null: the Kafka listener is off (or there is no local log-node). */
  kafkaPort: number | null;
  /** The external log `--log` named, when there is no local log-node. */
  log?: string;
  dataDir: string;
}

export function readyBanner({ url, host, kafkaPort, log, dataDir }: ReadyFacts): string {
  const kafka = kafkaPort === null ? null : `${host}:${kafkaPort}`;
  const rows: Array<[string, string, string]> = [
    ['console', `${url}/`, 'status, search, live changes'],
    ['HTTP API', `${url}/v1/`, `try: curl ${url}/v1/status`],
    log !== undefined
      ? ['log', log, 'an existing log; no local log-node']
      : kafka === null
        ? ['Kafka', 'off', 'turn on with --kafka-port']
        : ['Kafka', kafka, 'bootstrap server for any Kafka client; a collection is a topic'],
    ['data', dataDir, ''],
  ];
  const nameWidth = Math.max(...rows.map(([name]) => name.length));
  const whereWidth = Math.max(...rows.map(([, where]) => where.length));
  const lines = rows.map(
    ([name, where, note]) =>
      `  ${name.padEnd(nameWidth)}  ${note === '' ? where : `${where.padEnd(whereWidth)}  ${note}`}`,
  );
  const first = `tailbase is ready: ${url}${kafka === null ? '' : `  Kafka: ${kafka}`}  (data in ${dataDir})`;
  return [first, ...lines, '  Ctrl-C stops it (writes in flight finish first).', ''].join('\n');
}
