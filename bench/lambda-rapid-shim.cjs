// Stands in for aws-lambda-ric's native Runtime API client (rapid-client.node, curl, built by the
// package's install scripts, which bench/lambda-runtime.ts does not run): the runtime client asks
// for events over its own JavaScript HTTP client (AWS_LAMBDA_NODEJS_USE_ALTERNATIVE_CLIENT_1) but
// posts answers only through the native one, so this gives it those two calls over node:http.
// Loaded with --require by bench/lambda-runtime.ts.
const Module = require('node:module');
const http = require('node:http');

const FAKE = '/aws-lambda-ric-shim/rapid-client.node';
const [host, port] = (process.env.AWS_LAMBDA_RUNTIME_API ?? '').split(':');
const post = (path, body, headers = {}) => {
  const req = http.request({
    host,
    port,
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
  });
  req.on('error', () => undefined);
  req.end(body);
};
const client = {
  next() {
    throw new Error('set AWS_LAMBDA_NODEJS_USE_ALTERNATIVE_CLIENT_1=true');
  },
  done(id, body) {
    post(`/2018-06-01/runtime/invocation/${id}/response`, body);
  },
  error(id, body, xray) {
    post(`/2018-06-01/runtime/invocation/${id}/error`, body, {
      'lambda-runtime-function-error-type': 'Runtime.Unhandled',
      'lambda-runtime-function-xray-error-cause': xray ?? '',
    });
  },
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request.endsWith('rapid-client.node') ? FAKE : resolve.call(this, request, ...rest);
};
const shim = new Module(FAKE);
shim.filename = FAKE;
shim.loaded = true;
shim.exports = client;
Module._cache[FAKE] = shim;
