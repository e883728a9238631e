/**
 * What change feeds have counted of views' partitions, kept gateway-wide: per topic-partition,
 * the offset a count read through and the greatest epoch of the records below it
 * (feed-fences.ts). A feed that starts past a mark reads the partition from the mark, not from
 * its log start, and leaves a mark further on: every feed's count costs the records written since
 * the last one, not the view's size.
 *
 * A mark holds for one incarnation of the topic (TopicInfo.incarnation): a view dropped and
 * declared again under its name writes a new topic from offset 0 whose epochs start again, and a
 * mark of the old one would fence its records. A redefinition writes a topic of another name, so
 * another mark. And it holds while the partition's log start is where its count began: retention
 * may since have removed records whose epochs are in it, which a count from the log start as it
 * is now (a restarted gateway's, a rebuilt serve-node's) never sees, so the count begins there
 * again. Marks of topics no longer read leave as others come: at most `partitionsMax`, the
 * least recently used going first.
 */
export interface EpochMark {
  incarnation: number;
  /** The log start the count began at: the mark holds while the partition still starts there. */
  start: number;
  /** The offset the count read through: `epoch` is the greatest of the records below it. */
  next: number;
  /** −1: no record below `next` carries an epoch. */
  epoch: number;
}

export class FeedEpochs {
  /** topic/partition → its mark, least recently used first. */
  private readonly marks = new Map<string, EpochMark>();

  constructor(private readonly partitionsMax: number) {}

  get size(): number {
    return this.marks.size;
  }

  /** The partition's mark of that incarnation; undefined when there is none. */
  at(topic: string, partition: number, incarnation: number): EpochMark | undefined {
    const id = `${topic}/${partition}`;
    const mark = this.marks.get(id);
    if (mark === undefined || mark.incarnation !== incarnation) return undefined;
    this.marks.delete(id);
    this.marks.set(id, mark);
    return mark;
  }

  /**
   * Keeps `mark` unless the partition has one of a later incarnation, or of a later log start, or
   * further on from the same one.
   */
  record(topic: string, partition: number, mark: EpochMark): void {
    const id = `${topic}/${partition}`;
    const kept = this.marks.get(id);
    if (
      kept !== undefined &&
      (kept.incarnation > mark.incarnation ||
        (kept.incarnation === mark.incarnation &&
          (kept.start > mark.start || (kept.start === mark.start && kept.next >= mark.next))))
    ) {
      return;
    }
    this.marks.delete(id);
    this.marks.set(id, { ...mark });
    if (this.marks.size > this.partitionsMax) {
      this.marks.delete(this.marks.keys().next().value as string);
    }
  }
}
