/** CDK assertions for the search index (issue 14): the collection, its policies and the index function's access. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { collectionName, type SearchTarget, searchTarget } from '../../infra/constructs/search.ts';
import { CrawlerStack } from '../../infra/crawler-stack.ts';
import { parseConfig } from '../../shared/config.ts';
import { awsSigning } from '../../shared/search/opensearch-sink.ts';
import { resourceNames } from '../../shared/topology.ts';
import { type Cfn, cdkContext, logicalId } from '../helpers/infra-template.ts';

const OPERATOR = 'arn:aws:iam::123456789012:role/search-admin';

function build(search?: SearchTarget) {
  const app = new App({ context: { ...cdkContext(), 'aws:cdk:bundling-stacks': [] } });
  const stack = new CrawlerStack(app, resourceNames('find').stack, { crawlName: 'find', search });
  const template = Template.fromStack(stack);
  const json = template.toJSON() as Cfn;
  const of = (type: string) =>
    Object.values(json.Resources as Cfn).filter((r: Cfn) => r.Type === type) as Cfn[];
  const indexFn = json.Resources[logicalId(stack.functions.index)] as Cfn;
  const indexRole = logicalId(stack.functions.index.role as never);
  /** Every IAM statement naming an aoss: or es: action, with the role it is attached to. */
  const searchGrants = of('AWS::IAM::Policy').flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as Cfn[])
      .filter((s) => [s.Action].flat().some((a: string) => /^(aoss|es):/.test(a)))
      .map((s) => ({
        roles: p.Properties.Roles.map((r: Cfn) => r.Ref),
        action: s.Action,
        resource: s.Resource,
      })),
  );
  return { json, of, indexFn, indexRole, searchGrants };
}

describe('search index on AWS', () => {
  it('serverless: an encrypted collection, SigV4 only, its endpoint in the index function and the outputs', () => {
    const { json, of, indexFn, indexRole, searchGrants } = build({
      kind: 'serverless',
      operators: [OPERATOR],
    });
    const name = collectionName('find');
    const [collection] = of('AWS::OpenSearchServerless::Collection');
    assert.deepEqual(collection?.Properties, { Name: name, Type: 'SEARCH' });
    const policies = of('AWS::OpenSearchServerless::SecurityPolicy');
    const encryption = policies.find((p) => p.Properties.Type === 'encryption');
    assert.deepEqual(JSON.parse(encryption?.Properties.Policy), {
      Rules: [{ ResourceType: 'collection', Resource: [`collection/${name}`] }],
      AWSOwnedKey: true,
    });
    assert.ok(policies.some((p) => p.Properties.Type === 'network'));
    const collectionId = Object.keys(json.Resources).find(
      (k) => json.Resources[k].Type === 'AWS::OpenSearchServerless::Collection',
    );
    const endpoint = { 'Fn::GetAtt': [collectionId, 'CollectionEndpoint'] };
    assert.deepEqual(indexFn.Properties.Environment.Variables.TRAWL_SEARCH_ENDPOINT, endpoint);
    assert.deepEqual(json.Outputs.SearchEndpoint.Value, endpoint);
    // Data access: the index function's role writes its collection's indices; operators may also delete.
    const [access] = of('AWS::OpenSearchServerless::AccessPolicy');
    const policy = access?.Properties.Policy as Cfn;
    const text = JSON.stringify(policy);
    assert.match(text, new RegExp(`index/${name}/\\*`));
    assert.ok(text.includes(indexRole), 'the index role is a principal');
    assert.ok(text.includes(OPERATOR));
    assert.equal(text.match(/aoss:DeleteIndex/g)?.length, 1, 'only the operators may delete an index');
    // IAM: data-plane access to this collection only, for the index function only.
    assert.deepEqual(searchGrants, [
      { roles: [indexRole], action: 'aoss:APIAccessAll', resource: { 'Fn::GetAtt': [collectionId, 'Arn'] } },
    ]);
  });

  it('an existing domain: its endpoint, and the HTTP verbs on that domain only', () => {
    const endpoint = 'https://search-docs-abc123xyz.eu-west-1.es.amazonaws.com';
    const { of, indexFn, indexRole, searchGrants, json } = build({ kind: 'endpoint', endpoint });
    assert.equal(of('AWS::OpenSearchServerless::Collection').length, 0);
    assert.equal(indexFn.Properties.Environment.Variables.TRAWL_SEARCH_ENDPOINT, endpoint);
    assert.equal(json.Outputs.SearchEndpoint.Value, endpoint);
    assert.equal(searchGrants.length, 1);
    assert.deepEqual(searchGrants[0]?.roles, [indexRole]);
    assert.ok(!JSON.stringify(searchGrants[0]?.action).includes('Delete'));
    assert.match(JSON.stringify(searchGrants[0]?.resource), /:es:eu-west-1:.*:domain\/docs\/\*/);
  });

  it('the feed sink: nothing to search, no grants; the local engine: a plain endpoint', () => {
    const feed = build();
    assert.equal(feed.of('AWS::OpenSearchServerless::Collection').length, 0);
    assert.equal(feed.indexFn.Properties.Environment.Variables.TRAWL_SEARCH_ENDPOINT, undefined);
    assert.equal(feed.json.Outputs.SearchEndpoint, undefined);
    assert.deepEqual(feed.searchGrants, []);
    const local = build({ kind: 'endpoint', endpoint: 'http://127.0.0.1:9200' });
    assert.equal(
      local.indexFn.Properties.Environment.Variables.TRAWL_SEARCH_ENDPOINT,
      'http://127.0.0.1:9200',
    );
    assert.deepEqual(local.searchGrants, []);
  });

  it('the target from config and context; bad operator ARNs refused', () => {
    const config = (index: unknown) =>
      parseConfig({ name: 'find', startUrls: ['https://example.com/'], index });
    assert.equal(searchTarget(config({ sink: 'feed' }), undefined, undefined), undefined);
    assert.deepEqual(searchTarget(config({ sink: 'opensearch' }), undefined, `${OPERATOR}, `), {
      kind: 'serverless',
      operators: [OPERATOR],
    });
    assert.deepEqual(searchTarget(config({ sink: 'opensearch' }), 'http://127.0.0.1:9', undefined), {
      kind: 'endpoint',
      endpoint: 'http://127.0.0.1:9',
    });
    const domain = 'https://search-d-x1.us-east-1.es.amazonaws.com';
    assert.deepEqual(
      searchTarget(config({ sink: 'opensearch', opensearch: { endpoint: domain } }), undefined, ''),
      {
        kind: 'endpoint',
        endpoint: domain,
      },
    );
    assert.throws(() => searchTarget(config({ sink: 'opensearch' }), undefined, 'admin'), /not an IAM role/);
    assert.equal(collectionName('A_Very_Long_Crawl_Name_That_Goes_On_And_On').length <= 32, true);
    assert.match(collectionName('A_b'), /^trawl-a-b$/);
  });

  it('requests to AWS endpoints are signed for their service and region; others are plain', () => {
    assert.deepEqual(awsSigning('https://abc123.eu-west-1.aoss.amazonaws.com'), {
      service: 'aoss',
      region: 'eu-west-1',
    });
    assert.deepEqual(awsSigning('https://search-d-x1.us-east-1.es.amazonaws.com'), {
      service: 'es',
      region: 'us-east-1',
    });
    assert.equal(awsSigning('http://127.0.0.1:9200'), null);
    assert.equal(awsSigning('https://aoss.amazonaws.com.evil.test'), null);
  });
});
