/**
 * The search index the index function feeds (index.sink "opensearch"), one of three:
 * - serverless: an OpenSearch Serverless SEARCH collection created here, encrypted at rest with an
 *   AWS-owned key, reachable over HTTPS with SigV4 only (network policy: public endpoint, IAM auth),
 *   and a data access policy naming the index function's role (plus the operators' roles given,
 *   for `trawl search` and `trawl reindex`);
 * - domain: an existing OpenSearch Service domain's endpoint from the config, the function allowed
 *   the HTTP verbs the sink uses on that domain only;
 * - plain: any other endpoint (the embedded engine on the local cloud), no signing.
 * The function finds it in TRAWL_SEARCH_ENDPOINT; the stack outputs SearchEndpoint.
 */
import { Stack } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as aoss from 'aws-cdk-lib/aws-opensearchserverless';
import { Construct } from 'constructs';
import type { CrawlConfig } from '../../shared/config.ts';
import { allow } from './grants.ts';

export type SearchTarget =
  | { kind: 'serverless'; operators?: string[] }
  | { kind: 'endpoint'; endpoint: string };

/** OpenSearch Serverless names: 3–32 characters, lowercase letters, digits and hyphens, a letter first. */
export function collectionName(crawl: string): string {
  const name = `trawl-${crawl.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 32);
  return name.replace(/-+$/, '');
}

/** Data-plane permissions of the index function: create its index, write and read documents. */
const WRITER = [
  'aoss:CreateIndex',
  'aoss:DescribeIndex',
  'aoss:UpdateIndex',
  'aoss:ReadDocument',
  'aoss:WriteDocument',
];
/** `trawl search` and `trawl reindex` (fresh index, alias switch, old index dropped) for the operators. */
const OPERATOR = [...WRITER, 'aoss:DeleteIndex'];
const OPERATOR_ALIASES = [
  'aoss:CreateCollectionItems',
  'aoss:DescribeCollectionItems',
  'aoss:UpdateCollectionItems',
];

export class SearchIndex extends Construct {
  readonly endpoint: string;

  constructor(scope: Construct, id: string, crawl: string, target: SearchTarget, writer: iam.IRole) {
    super(scope, id);
    if (target.kind === 'endpoint') {
      this.endpoint = target.endpoint;
      const domain = domainArn(Stack.of(this), target.endpoint);
      // The sink's verbs: HEAD/PUT (index), POST (bulk, search, refresh); nothing else.
      if (domain)
        allow(writer, ['es:ESHttpHead', 'es:ESHttpGet', 'es:ESHttpPut', 'es:ESHttpPost'], [`${domain}/*`]);
      return;
    }
    const name = collectionName(crawl);
    const encryption = new aoss.CfnSecurityPolicy(this, 'Encryption', {
      name,
      type: 'encryption',
      policy: JSON.stringify({
        Rules: [{ ResourceType: 'collection', Resource: [`collection/${name}`] }],
        AWSOwnedKey: true,
      }),
    });
    // Lambda runs outside a VPC: the endpoint is public, and every request must be SigV4-signed.
    const network = new aoss.CfnSecurityPolicy(this, 'Network', {
      name,
      type: 'network',
      policy: JSON.stringify([
        { Rules: [{ ResourceType: 'collection', Resource: [`collection/${name}`] }], AllowFromPublic: true },
      ]),
    });
    const collection = new aoss.CfnCollection(this, 'Collection', { name, type: 'SEARCH' });
    collection.addDependency(encryption);
    collection.addDependency(network);
    const indices = (Permission: string[]) => ({
      ResourceType: 'index',
      Resource: [`index/${name}/*`],
      Permission,
    });
    const items = {
      ResourceType: 'collection',
      Resource: [`collection/${name}`],
      Permission: OPERATOR_ALIASES,
    };
    const operators = target.operators ?? [];
    const access = new aoss.CfnAccessPolicy(this, 'Access', {
      name,
      type: 'data',
      policy: JSON.stringify([
        { Rules: [indices(WRITER)], Principal: [writer.roleArn] },
        ...(operators.length > 0 ? [{ Rules: [indices(OPERATOR), items], Principal: operators }] : []),
      ]),
    });
    collection.addDependency(access);
    // IAM side of the same door: data-plane calls to this collection only.
    allow(writer, ['aoss:APIAccessAll'], [collection.attrArn]);
    this.endpoint = collection.attrCollectionEndpoint;
  }
}

/** The ARN of the OpenSearch Service domain behind an endpoint like search-NAME-ID.REGION.es.amazonaws.com. */
export function domainArn(stack: Stack, endpoint: string): string | null {
  const m = /^(?:search|vpc)-(.+)-[a-z0-9]+\.([a-z0-9-]+)\.es\.amazonaws\.com$/.exec(
    new URL(endpoint).hostname,
  );
  if (!m) return null;
  return stack.formatArn({ service: 'es', region: m[2], resource: 'domain', resourceName: m[1] });
}

const ROLE_ARN = /^arn:aws[a-z-]*:(iam|sts)::\d{12}:[\w+=,.@/-]+$/;

/**
 * The stack's search target from the crawl config and CDK context: none with the feed sink;
 * the endpoint from `-c searchEndpoint=` (what `trawl deploy --local` passes: the embedded
 * engine) or from the config; else a Serverless collection, with `-c searchOperators=ARN,…`
 * the roles allowed to search and reindex it.
 */
export function searchTarget(
  config: CrawlConfig,
  endpoint: unknown,
  operators: unknown,
): SearchTarget | undefined {
  if (config.index.sink !== 'opensearch') return undefined;
  if (endpoint !== undefined && typeof endpoint !== 'string')
    throw new Error('context searchEndpoint must be a URL');
  const url = endpoint ?? config.index.opensearch.endpoint;
  if (url) return { kind: 'endpoint', endpoint: url };
  if (operators !== undefined && typeof operators !== 'string')
    throw new Error('context searchOperators must be comma-separated role ARNs');
  const arns = (operators ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const bad = arns.find((a) => !ROLE_ARN.test(a));
  if (bad) throw new Error(`context searchOperators: not an IAM role or user ARN: ${bad}`);
  return { kind: 'serverless', operators: arns };
}
