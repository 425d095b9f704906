import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { allowAuthSecrets, grantStage } from './grants.ts';
import { type CrawlResources, scheduleStage, stageFunction } from './stage-function.ts';

export interface SeedStageProps {
  resources: CrawlResources;
  /** EventBridge rate for sitemap/start-URL discovery */
  discoveryIntervalMinutes: number;
  /** the Secrets Manager ARN of `fetch.proxy.password`: the start sites' robots.txt goes through the proxy */
  proxySecretArns?: string[];
}

/** Seed stage: puts start URLs and sitemap URLs into the frontier on a schedule, then kicks fetch. */
export class SeedStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(
    scope: Construct,
    id: string,
    { resources: r, discoveryIntervalMinutes, proxySecretArns }: SeedStageProps,
  ) {
    super(scope, id);
    this.fn = stageFunction(this, 'seed', { environment: r.environment });
    grantStage(this.fn, 'seed', r);
    // Not fetch.auth's secrets (robots.txt is read without credentials): the proxy's login only.
    allowAuthSecrets(this.fn, proxySecretArns ?? []);
    scheduleStage(this, 'Discovery', discoveryIntervalMinutes, this.fn);
  }
}
