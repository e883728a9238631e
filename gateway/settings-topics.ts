/**
 * The topics a settings change writes for, their configs set first, so configs the log refuses
 * leave the settings unwritten. A collection's topic is created when missing, as its first write
 * would create it. A view's versions' topics never are: between the read of the catalog and the
 * call, a swap (or a new definition replacing a rebuild) may have retired one, and creating it
 * again would leave a topic that nothing serves, tails or drops. Such a change is refused whole,
 * before any settings record is written (the configs of its other topics may have been set).
 */
import { isUnknownTopic, notFound, TailbaseError } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import type { TopicConfigs, TopicInfo } from '../shared/topics.js';
import { type CatalogView, settingsTopics, viewOfTopic } from '../shared/view-catalog.js';

/** What a settings change of `name` writes, as the catalog read before it says. */
export interface SettingsTarget {
  name: string;
  views: ReadonlyMap<string, CatalogView>;
  /**
   * The topic the name serves from now (whose settings a PATCH merges into), then a rebuild's,
   * which serves next: each gets the settings record.
   */
  topics: string[];
}

/**
 * 409 `view_read_only` for the topic of one of a view's versions (serving, rebuilding or retired),
 * as writes to it are: a name the collection pattern allows, so without this it would be taken
 * for a collection's and created again once a retired version was deleted. A view's settings are
 * set by its name, which reaches every version that serves or will.
 */
export function settingsTarget(
  views: ReadonlyMap<string, CatalogView>,
  name: string,
): SettingsTarget {
  if (!views.has(name)) {
    const owner =
      viewOfTopic(views, name) ??
      [...views.values()].find((view) => view.retired.includes(name)) ??
      null;
    if (owner !== null) {
      throw new TailbaseError(
        409,
        'view_read_only',
        `${name} is a topic of view ${owner.view.name}: set the view's settings by its name`,
        { collection: name, view: owner.view.name },
      );
    }
  }
  return { name, views, topics: settingsTopics(views, name) };
}

/** Sets the target's topics' configs; the serving topic as the log holds it after the change. */
export async function configureSettingsTopics(
  log: LogClient,
  { name, views, topics }: SettingsTarget,
  topicConfigs: Partial<TopicConfigs>,
  currentViews: () => Promise<ReadonlyMap<string, CatalogView>>,
): Promise<TopicInfo> {
  if (!views.has(name)) return log.ensureTopic(name, topicConfigs);
  // Every call settled before deciding: one refused must not answer while another still runs.
  const settled = await Promise.allSettled(
    topics.map((topic) => log.setTopicConfigs(topic, topicConfigs)),
  );
  const failures = settled.flatMap((result) =>
    result.status === 'rejected' ? [result.reason as unknown] : [],
  );
  if (failures.length === 0) return (settled[0] as PromiseFulfilledResult<TopicInfo>).value;
  const other = failures.find((error) => !isUnknownTopic(error));
  if (other !== undefined) throw other;
  const configsSet = topics.filter((_, i) => settled[i].status === 'fulfilled');
  const now = await currentViews();
  if (!now.has(name)) {
    throw notFound('collection_not_found', `no collection ${name}: the view was dropped`, {
      collection: name,
    });
  }
  throw new TailbaseError(
    409,
    'view_topic_retired',
    `the topic of view ${name} was retired (a swap, a new definition, a drop) while its ` +
      `settings were written: the configs may have been set on its other topics (configsSet), ` +
      `and the settings record was not written: send them again`,
    { collection: name, topics, topicsNow: settingsTopics(now, name), configsSet },
  );
}
