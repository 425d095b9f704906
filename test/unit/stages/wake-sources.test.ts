import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sourcesToPoll } from '../../../shared/stages/fetch-stage.ts';

const records = (...bodies: string[]) => ({ Records: bodies.map((body) => ({ body })) });
const wake = (sources: unknown) => JSON.stringify({ due: '2026-11-23T00:00:00.000Z', sources });

describe('sourcesToPoll: which frontier sources a fetch invocation polls', () => {
  it('the union of the sources its wake-up calls name', () => {
    assert.deepEqual(sourcesToPoll(records(wake(['user']))), ['user']);
    assert.deepEqual(sourcesToPoll(records(wake(['follow', 'user']), wake(['user', 'refresh']))), [
      'follow',
      'user',
      'refresh',
    ]);
  });

  it('every source for a tick, a kick, an old or unreadable wake-up call, unknown names', () => {
    assert.equal(sourcesToPoll({ 'detail-type': 'Scheduled Event' }), undefined);
    assert.equal(sourcesToPoll({}), undefined);
    assert.equal(sourcesToPoll(null), undefined);
    assert.equal(sourcesToPoll(records(JSON.stringify({ due: 'x' }))), undefined);
    assert.equal(sourcesToPoll(records(wake(['user']), '{not json')), undefined);
    assert.equal(sourcesToPoll(records(wake(['user']), wake([]))), undefined);
    assert.equal(sourcesToPoll(records(wake(['nowhere']))), undefined);
  });
});
