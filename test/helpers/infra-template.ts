/** Builds the CrawlerStack for assertions and renders its IAM grants as readable `action resource` lines. */
import { readFileSync } from 'node:fs';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { CrawlerStack } from '../../infra/crawler-stack.ts';
import {
  EVENT_SOURCE_ACTIONS,
  EVENT_SOURCES,
  STAGE_ACCESS,
  type Target,
} from '../../shared/aws/permissions.ts';
import { FRONTIER, type ResourceNames, resourceNames, type StageName } from '../../shared/topology.ts';

// biome-ignore lint/suspicious/noExplicitAny: synthesized CloudFormation JSON is untyped
export type Cfn = Record<string, any>;
/** logical ID → readable label (`urls`, `frontier:user`, `stage:extract`, `log-group:fetch` …) */
export type StackLabels = Record<string, string>;

/** The feature flags of cdk.json, so tests synthesize what `cdk synth` does. */
export function cdkContext(): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')).context;
}

export interface BuildOptions {
  /** false skips esbuild (CDK's `aws:cdk:bundling-stacks` context); @default true */
  bundle?: boolean;
  discoveryIntervalMinutes?: number;
  refreshIntervalMinutes?: number;
  fetchReservedConcurrency?: number;
  fetchMemoryMb?: number;
  fetchEphemeralMb?: number;
  authSecretArns?: string[];
  proxySecretArns?: string[];
}

/** One synthesized stack; with bundling this runs esbuild five times, so build it once per file. */
export function buildStack(crawl: string, options: BuildOptions = {}) {
  const context = { ...cdkContext(), ...(options.bundle === false ? { 'aws:cdk:bundling-stacks': [] } : {}) };
  const app = new App({ context });
  const stack = new CrawlerStack(app, resourceNames(crawl).stack, {
    crawlName: crawl,
    discoveryIntervalMinutes: options.discoveryIntervalMinutes,
    refreshIntervalMinutes: options.refreshIntervalMinutes,
    fetchReservedConcurrency: options.fetchReservedConcurrency,
    fetchMemoryMb: options.fetchMemoryMb,
    fetchEphemeralMb: options.fetchEphemeralMb,
    authSecretArns: options.authSecretArns,
    proxySecretArns: options.proxySecretArns,
  });
  return { stack, template: Template.fromStack(stack), labels: stackLabels(stack) };
}

/** The logical ID of a construct's CloudFormation resource. */
export function logicalId(construct: IConstruct): string {
  return Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnElement);
}

function stackLabels(stack: CrawlerStack): StackLabels {
  const labels: StackLabels = {
    [logicalId(stack.storage.urls)]: 'urls',
    [logicalId(stack.storage.hosts)]: 'hosts',
    [logicalId(stack.storage.bucket)]: 'bucket',
  };
  for (const s of FRONTIER) {
    labels[logicalId(stack.frontier[s.name].queue)] = `frontier:${s.name}`;
    labels[logicalId(stack.frontier[s.name].dlq)] = `frontier:${s.name}:dlq`;
  }
  for (const [stage, q] of Object.entries(stack.stageQueues)) {
    labels[logicalId(q.queue)] = `stage:${stage}`;
    labels[logicalId(q.dlq)] = `stage:${stage}:dlq`;
  }
  for (const [stage, fn] of Object.entries(stack.functions)) {
    labels[logicalId(fn.node.scope!.node.findChild('Logs'))] = `log-group:${stage}`;
  }
  return labels;
}

function render(value: unknown, labels: StackLabels): string {
  if (typeof value === 'string') return value;
  const v = value as Cfn;
  if (v.Ref) return labels[v.Ref] ?? `\${${v.Ref}}`;
  if (v['Fn::GetAtt']) return labels[v['Fn::GetAtt'][0]] ?? v['Fn::GetAtt'].join('.');
  if (v['Fn::Join'])
    return (v['Fn::Join'][1] as unknown[]).map((p) => render(p, labels)).join(v['Fn::Join'][0]);
  return JSON.stringify(value);
}

/** Every `action resource` pair the stage's role allows, sorted; ARN prefixes shortened to `service:`. */
export function grantsOf(
  template: Template,
  stack: CrawlerStack,
  labels: StackLabels,
  stage: StageName,
): string[] {
  const roleId = logicalId(stack.functions[stage].role!);
  const policies = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Cfn>).filter(
    (p) => (p.Properties.Roles as Cfn[]).some((r) => r.Ref === roleId),
  );
  const lines = policies.flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as Cfn[]).flatMap((st) => {
      if (st.Effect !== 'Allow') throw new Error(`unexpected ${st.Effect} in ${stage}'s policy`);
      const resources = [st.Resource]
        .flat()
        .map((r) =>
          render(r, labels).replace(
            /^arn:\$\{AWS::Partition\}:(\w+):\$\{AWS::Region\}:\$\{AWS::AccountId\}:/,
            '$1:',
          ),
        );
      return ([st.Action].flat() as string[]).flatMap((a) => resources.map((r) => `${a} ${r}`));
    }),
  );
  return [...new Set(lines)].sort();
}

/** A declared target (shared/aws/permissions.ts) in the labels `grantsOf` renders resources as. */
function labelsOf(target: Target, names: ResourceNames): string[] {
  if (target === 'table:urls') return ['urls'];
  if (target === 'table:hosts') return ['hosts'];
  if (target === 'queues:frontier') return FRONTIER.map((s) => `frontier:${s.name}`);
  if (target === 'queue:extract') return ['stage:extract'];
  if (target === 'queue:index') return ['stage:index'];
  if (target === 'queue:wake') return ['stage:wake'];
  if (target === 'function:fetch') return [`lambda:function:${names.function('fetch')}`];
  if (target === 'bus:default') return ['events:event-bus/default'];
  if (target.startsWith('list:')) return ['bucket'];
  return [`bucket/${target.slice('objects:'.length)}*`];
}

/**
 * What a stage's role must hold: its declaration, the event source's polling of its stage queue
 * and writing to its own log group (what the Lambda service does with the role).
 */
export function expectedGrants(stage: StageName, names: ResourceNames): string[] {
  const lines = (Object.entries(STAGE_ACCESS[stage]) as [Target, string[]][]).flatMap(([target, actions]) =>
    labelsOf(target, names).flatMap((label) => actions.map((a) => `${a} ${label}`)),
  );
  const source = EVENT_SOURCES[stage];
  if (source) lines.push(...EVENT_SOURCE_ACTIONS.map((a) => `${a} ${labelsOf(source, names)[0]}`));
  lines.push(`logs:CreateLogStream log-group:${stage}`, `logs:PutLogEvents log-group:${stage}`);
  return [...new Set(lines)].sort();
}
