/**
 * cdk-nag's AWS Solutions rules on the synthesized stack, in both DynamoDB capacity modes: synthesis
 * fails on any finding not acknowledged, and the acknowledgments are only the justified ones
 * (each with its reason next to the construct it concerns, in infra/).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { CrawlerStack } from '../../infra/crawler-stack.ts';
import { PREFIXES } from '../../shared/layout.ts';
import { cdkContext } from '../helpers/infra-template.ts';

const PROVISIONED = { mode: 'provisioned', minUnits: 5, maxWriteUnits: 100, maxReadUnits: 100 } as const;

function nagged(dynamoCapacity?: typeof PROVISIONED) {
  const app = new App({ context: { ...cdkContext(), 'aws:cdk:bundling-stacks': [] } });
  const stack = new CrawlerStack(app, 'Trawl-nag', { crawlName: 'nag', dynamoCapacity });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}

/** Synthesizes; on findings, fails with each rule and the construct path from the validation report. */
function synthOrReport(app: App): void {
  try {
    app.synth();
  } catch (err) {
    const report = /found in: (\S+)/.exec(String(err))?.[1];
    const detail = report ? readFileSync(report, 'utf8') : String(err);
    assert.fail(`cdk-nag findings:\n${detail.slice(0, 8000)}`);
  }
}

function acknowledged(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      // recorded as `{ [rule id]: reason }`
      .flatMap((m) => Object.entries(m.data as Record<string, string>))
      .map(([id, reason]) => ({ path: c.node.path, id, reason })),
  );
}

describe('cdk-nag AwsSolutions', () => {
  it('passes on the on-demand stack', () => synthOrReport(nagged().app));
  it('passes on the provisioned-capacity stack (auto scaling roles included)', () =>
    synthOrReport(nagged(PROVISIONED).app));

  it('acknowledges only server access logs and per-prefix object keys, each with a reason', () => {
    const { app, stack } = nagged();
    synthOrReport(app);
    const acks = acknowledged(stack);
    assert.ok(acks.length > 0, 'acknowledgments are recorded as construct metadata');
    const prefixes = Object.values(PREFIXES).join('|');
    const allowed = new RegExp(
      `^AwsSolutions::AwsSolutions-(S1|IAM5\\[Resource::<\\w+\\.Arn>/(${prefixes})\\*\\])$`,
    );
    for (const a of acks) {
      assert.match(a.id, allowed, `${a.path}: ${a.id}`);
      assert.ok(a.reason.length >= 40, `${a.path}: ${a.id} has a real reason`);
    }
    assert.deepEqual(
      acks.filter((a) => a.id.endsWith('-S1')).map((a) => a.path),
      ['Trawl-nag/Storage/Store'],
    );
  });
});
