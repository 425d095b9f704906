import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DLQ_RETENTION_DAYS, QUEUE_MAX_MESSAGE_BYTES } from '../../shared/topology.ts';

export interface WorkQueueProps {
  queueName: string;
  dlqName: string;
  /** ≥ 6 × the consumer's function timeout (AWS guidance for Lambda + SQS); SQS maximum 12 h */
  visibilityTimeoutSeconds: number;
  /** receives before SQS redrives a message to the DLQ */
  maxReceiveCount: number;
  /** how long SQS keeps a message (topology QUEUE_RETENTION) */
  retentionSeconds: number;
}

/** An SQS queue with its own dead-letter queue, SQS-managed encryption and TLS-only access. */
export class WorkQueue extends Construct {
  readonly queue: sqs.Queue;
  readonly dlq: sqs.Queue;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    this.dlq = new sqs.Queue(this, 'Dlq', {
      queueName: props.dlqName,
      // 14 days is the SQS maximum retention: time to inspect and redrive poison messages.
      retentionPeriod: Duration.days(DLQ_RETENTION_DAYS),
      maxMessageSizeBytes: QUEUE_MAX_MESSAGE_BYTES,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      queueName: props.queueName,
      visibilityTimeout: Duration.seconds(props.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(props.retentionSeconds),
      maxMessageSizeBytes: QUEUE_MAX_MESSAGE_BYTES,
      deadLetterQueue: { queue: this.dlq, maxReceiveCount: props.maxReceiveCount },
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
  }
}
