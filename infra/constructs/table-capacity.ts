/**
 * DynamoDB capacity as a deployment choice (issue 13): on-demand (the default: a crawl is bursty,
 * nothing to plan) or provisioned with auto scaling at 70 % utilisation, which prices a write at
 * ≈ $0.26 per million instead of $0.625 once the crawl's rate is steady (docs/design-facts.md).
 * `cdk deploy -c dynamoCapacity=provisioned [-c dynamoMaxWriteUnits=N]`.
 */
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

export type TableCapacity =
  | { mode: 'on-demand' }
  | { mode: 'provisioned'; minUnits: number; maxWriteUnits: number; maxReadUnits: number };

export const ON_DEMAND: TableCapacity = { mode: 'on-demand' };
/** Auto scaling keeps consumed capacity near this share of the provisioned one. */
export const TARGET_UTILIZATION_PERCENT = 70;

/** The table props for the choice. */
export function billingProps(c: TableCapacity): Partial<dynamodb.TableProps> {
  if (c.mode === 'on-demand') return { billingMode: dynamodb.BillingMode.PAY_PER_REQUEST };
  return {
    billingMode: dynamodb.BillingMode.PROVISIONED,
    readCapacity: c.minUnits,
    writeCapacity: c.minUnits,
  };
}

/** Target-tracking auto scaling of reads and writes (provisioned only). */
export function autoScale(table: dynamodb.Table, c: TableCapacity): void {
  if (c.mode !== 'provisioned') return;
  table
    .autoScaleWriteCapacity({ minCapacity: c.minUnits, maxCapacity: c.maxWriteUnits })
    .scaleOnUtilization({ targetUtilizationPercent: TARGET_UTILIZATION_PERCENT });
  table
    .autoScaleReadCapacity({ minCapacity: c.minUnits, maxCapacity: c.maxReadUnits })
    .scaleOnUtilization({ targetUtilizationPercent: TARGET_UTILIZATION_PERCENT });
}

/** The choice from CDK context values; throws a clear error for anything else. */
export function capacityFromContext(mode: unknown, maxWrite: unknown): TableCapacity {
  if (mode === undefined || mode === 'on-demand') return ON_DEMAND;
  if (mode !== 'provisioned') throw new Error('context dynamoCapacity must be "on-demand" or "provisioned"');
  const max = maxWrite === undefined ? 1000 : Number(maxWrite);
  if (!Number.isInteger(max) || max < 5)
    throw new Error('context dynamoMaxWriteUnits must be an integer ≥ 5');
  return { mode: 'provisioned', minUnits: 5, maxWriteUnits: max, maxReadUnits: max };
}
