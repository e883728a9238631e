/**
 * The topics of views, which only their processors write: a Kafka Produce to one is refused with
 * POLICY_VIOLATION, changing nothing. The processor identifies itself by what no other client
 * has: in `tailbase start` it appends through the node's in-process binding, which never passes
 * this listener; on a cluster's serve-node it authenticates with the cluster secret as the view
 * processor (sasl.ts), and produce.ts asks nothing of this check for such a connection. A client
 * id is a label any client sets (`kcat -X client.id=...`), and a record header is read back by
 * whoever reads the topic, so neither could tell a processor from kcat. Which topics are views' is read from
 * the views topic in this node's own log (view-catalog.ts: the view's name, the topic of the
 * version that serves and of one being rebuilt), so a view declared a moment ago is refused at
 * once. A log-node that does not hold the views topic (it lives with partition 0) refuses nothing.
 */
import { TailbaseError } from '../../shared/errors.js';
import { ErrorCode } from '../../shared/kafka/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { ViewCatalog, viewOfTopic } from '../../shared/view-catalog.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';

/** Bytes one read of the views topic asks for. */
const VIEWS_READ_BYTES_MAX = 1024 * 1024;

export class ViewTopics {
  private readonly catalog: ViewCatalog;
  /** Whether this node stores partition 0, and so the views topic: asked of the log once. */
  private holdsViews: Promise<boolean> | null = null;

  constructor(private readonly log: LogClient) {
    this.catalog = new ViewCatalog(log, VIEWS_READ_BYTES_MAX);
  }

  /** Why a Kafka client may not produce to `topic` (an error code and message); null when it may. */
  async refusal(topic: string): Promise<{ errorCode: number; message: string | null } | null> {
    this.holdsViews ??= this.log.cluster().then(
      ({ hostedPartitions }) => hostedPartitions.includes(0),
      (error: unknown) => {
        this.holdsViews = null;
        throw error;
      },
    );
    if (!(await this.holdsViews)) return null;
    let views;
    try {
      views = await this.catalog.current();
    } catch (error) {
      // No views topic yet (404): there is no view to refuse a write for.
      if (error instanceof TailbaseError && error.status < 500) return null;
      return { errorCode: kafkaErrorCode(error), message: kafkaErrorMessage(error) };
    }
    const view = viewOfTopic(views, topic);
    if (view === null) return null;
    return {
      errorCode: ErrorCode.POLICY_VIOLATION,
      message: `${topic} is the topic of view ${view.view.name}: only its processor writes it`,
    };
  }
}
