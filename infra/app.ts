// CDK entry: `cdk synth -c crawl=NAME` or `cdk synth -c config=trawl.json` (see app-context.ts).
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { resourceNames } from '../shared/topology.ts';
import { crawlerPropsFromContext } from './app-context.ts';
import { CrawlerStack } from './crawler-stack.ts';

const app = new App();
const props = crawlerPropsFromContext((key) => app.node.tryGetContext(key));
const stackName = resourceNames(props.crawlName).stack;
new CrawlerStack(app, stackName, { ...props, stackName, description: `Trawl crawler: ${props.crawlName}` });
// cdk-nag's AWS Solutions rules: synth (and so deploy) fails on a finding not acknowledged in infra/.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
