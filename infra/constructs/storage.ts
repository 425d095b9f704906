import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { PREFIXES } from '../../shared/layout.ts';
import { TABLES } from '../../shared/topology.ts';
import { autoScale, billingProps, ON_DEMAND, type TableCapacity } from './table-capacity.ts';

export { PREFIXES };

/** Fetched page bundles are consumed by extract within minutes; a week covers DLQ redrives. */
const PAGE_BUNDLE_DAYS = 7;
/** Change hints older than this are past any refresh cycle's window (refresh-stage.ts HINT_LOOKBACK_MS). */
const HINT_DAYS = 14;

/** The URL-state table (the truth), the per-host politeness table and the crawl bucket. */
export class CrawlStorage extends Construct {
  readonly urls: dynamodb.Table;
  readonly hosts: dynamodb.Table;
  readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, capacity: TableCapacity = ON_DEMAND) {
    super(scope, id);
    const common = {
      // On-demand by default: a crawl is bursty; no capacity to plan, no throttling on the first burst.
      ...billingProps(capacity),
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // DynamoDB TTL deletes expired items for free.
      timeToLiveAttribute: 'expiresAt',
    };
    // No tableName: CloudFormation generates one (the stack outputs it). A fixed name on a retained
    // table made every deploy after `trawl destroy` fail on AWS ("already exists").
    this.urls = new dynamodb.Table(this, 'Urls', {
      ...common,
      partitionKey: { name: TABLES.urls.partitionKey, type: dynamodb.AttributeType.STRING },
      // The URL table is the crawl's source of truth: keep it (with the bucket) when the stack goes.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.hosts = new dynamodb.Table(this, 'Hosts', {
      ...common,
      partitionKey: { name: TABLES.hosts.partitionKey, type: dynamodb.AttributeType.STRING },
      // Politeness state and robots.txt cache: rebuilt on the next fetch, nothing to keep.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    autoScale(this.urls, capacity);
    autoScale(this.hosts, capacity);
    // No bucketName: S3 names are global, CloudFormation generates a unique one.
    this.bucket = new s3.Bucket(this, 'Store', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      lifecycleRules: [
        { id: 'expire-page-bundles', prefix: PREFIXES.pages, expiration: Duration.days(PAGE_BUNDLE_DAYS) },
        // Read by the next refresh cycle (refresh-stage.ts changeHints); kept a while for a stalled schedule.
        { id: 'expire-change-hints', prefix: PREFIXES.hints, expiration: Duration.days(HINT_DAYS) },
        { id: 'abort-multipart', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    // cdk-nag AwsSolutions-S1 (server access logs): they would need a second bucket and a log object
    // per request batch, and every request to this bucket comes from the stack's own roles, whose
    // calls CloudTrail records; the bucket is private (all public access blocked) and TLS-only.
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions::AwsSolutions-S1',
      reason:
        'only the crawl functions use this private, TLS-only bucket; CloudTrail records their calls, access logs would double the PUTs',
    });
  }
}
