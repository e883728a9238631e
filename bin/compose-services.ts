/**
 * Reads compose.yaml into the services a local cluster runs: compose.yaml is the one definition
 * of the topology, whether Docker or `tailbase cluster` runs it. A service's command, environment
 * (with `${VAR:-default}` interpolation), data volume, healthcheck and dependencies are kept;
 * what only makes sense in containers is translated: service host names become 127.0.0.1,
 * `--host 0.0.0.0` becomes loopback, and each volume becomes a directory under the data root.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export interface LocalService {
  name: string;
  args: string[];
  env: Record<string, string>;
  /** The healthcheck command (compose `CMD` form), without the `CMD` marker. */
  healthcheck: string[] | null;
  healthcheckIntervalMs: number;
  healthcheckRetries: number;
  dependsOn: string[];
  dataDir: string | null;
}

interface ComposeService {
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { source?: string; target: string })[];
  depends_on?: string[] | Record<string, unknown>;
  healthcheck?: { test?: string[] | string; interval?: string; retries?: number };
  profiles?: string[];
}

export function interpolate(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(
    /\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g,
    (_, name: string, fallback?: string) => {
      const current = env[name];
      return current !== undefined && current !== '' ? current : (fallback ?? '');
    },
  );
}

/** `NAME=value` split at its first '=' only: a value may hold '=' (base64 ends in '=='). */
function splitAssignment(line: string): [string, string] {
  const equals = line.indexOf('=');
  return equals < 0 ? [line, ''] : [line.slice(0, equals), line.slice(equals + 1)];
}

function durationMs(raw: string | undefined, fallbackMs: number): number {
  const match = raw === undefined ? null : /^(\d+)(ms|s|m)$/.exec(raw);
  if (!match) return fallbackMs;
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
}

/**
 * Topologically ordered services of a compose file, translated to run on this machine: those of
 * no profile (a profile's, such as `redpanda`'s brokers, are Docker's to run).
 */
export function readComposeServices(
  file: string,
  dataRoot: string,
  env: NodeJS.ProcessEnv,
): LocalService[] {
  const compose = parse(fs.readFileSync(file, 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const names = Object.keys(compose.services);
  const hostPattern = new RegExp(
    `\\b(?:${names.map((n) => n.replace(/[-]/g, '\\-')).join('|')}):(\\d+)`,
    'g',
  );
  const local = (text: string) => interpolate(text, env).replace(hostPattern, '127.0.0.1:$1');
  const unprofiled = names.filter((name) => (compose.services[name].profiles ?? []).length === 0);
  const services = unprofiled.map((name): LocalService => {
    const service = compose.services[name];
    const command = service.command ?? [];
    const words = Array.isArray(command) ? command : command.split(/\s+/).filter(Boolean);
    const volumeTargets = new Map<string, string>();
    for (const volume of service.volumes ?? []) {
      const target = typeof volume === 'string' ? volume.split(':')[1] : volume.target;
      if (target) volumeTargets.set(target, path.join(dataRoot, name));
    }
    const args = words
      .map(local)
      .map((word) => (word === '0.0.0.0' ? '127.0.0.1' : (volumeTargets.get(word) ?? word)));
    const environment = service.environment ?? {};
    const entries = Array.isArray(environment)
      ? environment.map(splitAssignment)
      : Object.entries(environment).map(
          ([key, value]) => [key, String(value ?? '')] as [string, string],
        );
    const test = service.healthcheck?.test;
    const healthcheck = Array.isArray(test) && test[0] === 'CMD' ? test.slice(1).map(local) : null;
    const dependsOn = Array.isArray(service.depends_on)
      ? service.depends_on
      : Object.keys(service.depends_on ?? {});
    return {
      name,
      args,
      env: Object.fromEntries(entries.map(([key, value]) => [key, local(value)])),
      healthcheck,
      healthcheckIntervalMs: Math.min(durationMs(service.healthcheck?.interval, 1000), 1000),
      healthcheckRetries: Math.max(service.healthcheck?.retries ?? 30, 30),
      dependsOn,
      dataDir: volumeTargets.size > 0 ? path.join(dataRoot, name) : null,
    };
  });
  return topologicalOrder(services);
}

function topologicalOrder(services: LocalService[]): LocalService[] {
  const byName = new Map(services.map((s) => [s.name, s]));
  const ordered: LocalService[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (service: LocalService) => {
    if (state.get(service.name) === 'done') return;
    if (state.get(service.name) === 'visiting')
      throw new Error(`depends_on cycle through ${service.name}`);
    state.set(service.name, 'visiting');
    for (const dependency of service.dependsOn) {
      const other = byName.get(dependency);
      if (!other) throw new Error(`${service.name} depends on unknown service ${dependency}`);
      visit(other);
    }
    state.set(service.name, 'done');
    ordered.push(service);
  };
  services.forEach(visit);
  return ordered;
}
