/**
 * A view's definition: what a client declares (PUT /v1/views/:v), as the views topic stores it
 * (shared/topics.ts VIEWS_TOPIC: key = the view, value = this JSON, null = dropped), and its
 * checks. A view derives from one source (a collection or another view) by a projection
 * (`select`) or a grouping (`groupBy` + `aggregates`), after an optional filter (shared/filter/).
 * Fields are top-level property names of the source documents: a dotted name is a property whose
 * name holds a dot, never a path, so an output document's fields are exactly the names declared.
 */
import { badRequest } from './errors.js';
import { type FilterNode, parseFilter } from './filter/index.js';
import { utf8Bytes } from './filter/filter-error.js';
import {
  type ParsedWindow,
  parseWindow,
  WINDOW_FIELDS,
  WINDOW_LIMITS_DEFAULT,
  type WindowDefinition,
  type WindowLimits,
} from './view-window.js';

export type AggregateFunction = 'count' | 'sum' | 'min' | 'max' | 'avg' | 'latest';

export const AGGREGATE_FUNCTIONS: readonly AggregateFunction[] = [
  'count',
  'sum',
  'min',
  'max',
  'avg',
  'latest',
];

/** What a client sends and the views topic holds. */
export interface ViewDefinition {
  from: string;
  filter?: string;
  select?: string[];
  groupBy?: string[];
  /** Output field → `fn(field)`, or `count()`. */
  aggregates?: Record<string, string>;
  /** A grouping's event-time window (shared/view-window.ts). */
  window?: WindowDefinition;
}

export interface ViewAggregate {
  output: string;
  fn: AggregateFunction;
  /** The source field it reads; null for count(). */
  field: string | null;
}

/** A definition checked and parsed: what a processor runs. */
export type ParsedView = { name: string; from: string; filter: FilterNode | null } & (
  | { kind: 'projection'; select: string[] }
  | {
      kind: 'grouping';
      groupBy: string[];
      aggregates: ViewAggregate[];
      window: ParsedWindow | null;
    }
);

export interface ViewLimits extends WindowLimits {
  groupByFieldsMax: number;
  aggregatesMax: number;
  selectFieldsMax: number;
  fieldBytesMax: number;
}

export const VIEW_LIMITS_DEFAULT: Readonly<ViewLimits> = Object.freeze({
  groupByFieldsMax: 8,
  aggregatesMax: 32,
  selectFieldsMax: 256,
  fieldBytesMax: 256,
  ...WINDOW_LIMITS_DEFAULT,
});

const CONTROL = /[\u0000-\u001f]/;
const AGGREGATE_PATTERN = /^\s*([a-zA-Z_]+)\s*\(\s*(.*?)\s*\)\s*$/s;
const DEFINITION_FIELDS = new Set(['from', 'filter', 'select', 'groupBy', 'aggregates', 'window']);

const invalid = (message: string, details?: Record<string, unknown>) =>
  badRequest('invalid_view', message, details);

/**
 * The definition, checked and parsed; throws a 400 whose code names the problem: `invalid_view`
 * (its shape), `unknown_aggregate`, `invalid_aggregate`, `invalid_filter`, `invalid_window`,
 * `view_cycle` (a view of itself; cycles through other views are the catalog's to find).
 */
export function parseViewDefinition(
  name: string,
  body: unknown,
  limits: ViewLimits = VIEW_LIMITS_DEFAULT,
): ParsedView {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid(
      'a view definition is a JSON object: {from, filter?, select | groupBy + aggregates + window?}',
    );
  }
  const fields = body as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (!DEFINITION_FIELDS.has(field)) {
      throw invalid(`unknown field ${JSON.stringify(field.slice(0, 80))} in a view definition`, {
        field: field.slice(0, 80),
      });
    }
  }
  const { from, filter, select, groupBy, aggregates, window } = fields;
  if (typeof from !== 'string') throw invalid('`from` names the source collection or view');
  if (from === name) {
    throw badRequest('view_cycle', `view ${name} cannot derive from itself`, { view: name });
  }
  if (filter !== undefined && typeof filter !== 'string') {
    throw invalid('`filter` is a filter expression, as a string');
  }
  const parsedFilter = filter === undefined || filter === '' ? null : parseFilter(filter);
  const base = { name, from, filter: parsedFilter };
  if (select !== undefined) {
    if (window !== undefined) {
      throw badRequest('invalid_window', 'a window needs a grouping: `groupBy` and `aggregates`');
    }
    if (groupBy !== undefined || aggregates !== undefined) {
      throw invalid('a view has either `select` (a projection) or `groupBy` and `aggregates`');
    }
    return {
      ...base,
      kind: 'projection',
      select: fieldList(select, 'select', limits, limits.selectFieldsMax),
    };
  }
  if (groupBy === undefined) {
    throw invalid('a view needs `select` (a projection) or `groupBy` and `aggregates`');
  }
  const keys = fieldList(groupBy, 'groupBy', limits, limits.groupByFieldsMax);
  const parsedAggregates = parseAggregates(aggregates, keys, limits);
  const parsedWindow = window === undefined ? null : parseWindow(window, limits);
  if (parsedWindow !== null) {
    const taken = [...keys, ...parsedAggregates.map((a) => a.output)].find((f) =>
      WINDOW_FIELDS.includes(f),
    );
    if (taken !== undefined) {
      throw badRequest(
        'invalid_window',
        `a windowed view writes ${WINDOW_FIELDS.join(' and ')}: no groupBy field or aggregate may be named ${JSON.stringify(taken)}`,
      );
    }
    checkField(parsedWindow.field, 'window', limits);
  }
  return {
    ...base,
    kind: 'grouping',
    groupBy: keys,
    aggregates: parsedAggregates,
    window: parsedWindow,
  };
}

/** The definition as stored: the fields a client gave, in a fixed order. */
export function definitionOf(view: ParsedView, filterText: string | undefined): ViewDefinition {
  const stored: ViewDefinition = { from: view.from };
  if (filterText !== undefined && filterText !== '') stored.filter = filterText;
  if (view.kind === 'projection') {
    stored.select = view.select;
  } else {
    stored.groupBy = view.groupBy;
    stored.aggregates = Object.fromEntries(
      view.aggregates.map(({ output, fn, field }) => [output, `${fn}(${field ?? ''})`]),
    );
    if (view.window !== null) stored.window = view.window.definition;
  }
  return stored;
}

function fieldList(value: unknown, what: string, limits: ViewLimits, countMax: number): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw invalid(`\`${what}\` is a non-empty array of field names`);
  }
  if (value.length > countMax) {
    throw invalid(`\`${what}\` has ${value.length} fields; at most ${countMax}`, { countMax });
  }
  const seen = new Set<string>();
  for (const field of value) {
    checkField(field, what, limits);
    if (seen.has(field)) throw invalid(`\`${what}\` names ${JSON.stringify(field)} twice`);
    seen.add(field);
  }
  return value as string[];
}

function checkField(field: unknown, what: string, limits: ViewLimits): asserts field is string {
  // The state's keys join field names with a control character (views/grouping.ts).
  if (typeof field !== 'string' || field.length === 0 || CONTROL.test(field)) {
    throw invalid(`\`${what}\` holds field names: non-empty strings without control characters`);
  }
  if (utf8Bytes(field) > limits.fieldBytesMax) {
    throw invalid(`a field name in \`${what}\` is over ${limits.fieldBytesMax} bytes`, {
      fieldBytesMax: limits.fieldBytesMax,
    });
  }
}

function parseAggregates(value: unknown, groupBy: string[], limits: ViewLimits): ViewAggregate[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('`aggregates` is an object: output field → "count()", "sum(total)", ...');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 || entries.length > limits.aggregatesMax) {
    throw invalid(`\`aggregates\` holds 1 to ${limits.aggregatesMax} output fields`, {
      aggregatesMax: limits.aggregatesMax,
    });
  }
  return entries.map(([output, text]) => {
    checkField(output, 'aggregates', limits);
    if (groupBy.includes(output)) {
      throw invalid(`the aggregate ${JSON.stringify(output)} has the name of a groupBy field`);
    }
    const match = typeof text === 'string' ? AGGREGATE_PATTERN.exec(text) : null;
    if (match === null) {
      throw badRequest(
        'invalid_aggregate',
        `aggregate ${JSON.stringify(output)} is not fn(field): use count(), sum(f), min(f), max(f), avg(f) or latest(f)`,
        { aggregate: output },
      );
    }
    const fn = match[1] as AggregateFunction;
    if (!AGGREGATE_FUNCTIONS.includes(fn)) {
      throw badRequest(
        'unknown_aggregate',
        `unknown aggregate ${JSON.stringify(match[1])}: one of ${AGGREGATE_FUNCTIONS.join(', ')}`,
        { aggregate: output, function: match[1] },
      );
    }
    const field = match[2];
    if (fn === 'count') {
      if (field !== '')
        throw badRequest('invalid_aggregate', 'count() takes no field', { aggregate: output });
      return { output, fn, field: null };
    }
    if (field === '') {
      throw badRequest('invalid_aggregate', `${fn}() needs a field: ${fn}(total)`, {
        aggregate: output,
      });
    }
    checkField(field, 'aggregates', limits);
    return { output, fn, field };
  });
}
