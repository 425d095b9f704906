// CDK entry: `cdk synth -c crawl=NAME` or `cdk synth -c config=trawl.json` (see app-context.ts).
import { App } from 'aws-cdk-lib';
import { resourceNames } from '../shared/topology.ts';
import { crawlerPropsFromContext } from './app-context.ts';
import { CrawlerStack } from './crawler-stack.ts';

const app = new App();
const props = crawlerPropsFromContext((key) => app.node.tryGetContext(key));
const stackName = resourceNames(props.crawlName).stack;
new CrawlerStack(app, stackName, { ...props, stackName, description: `Trawl crawler: ${props.crawlName}` });
