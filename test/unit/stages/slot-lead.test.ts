/**
 * The slot lead's arithmetic, write by write: scripted write times, no table and no clock, so
 * every figure is exact. test/integration/slot-lead.test.ts drives the same lead through the real
 * hosts table on the emulator, where how fast a "fast" write is depends on the machine's load.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SlotLead } from '../../../shared/stages/politeness/host-turns.ts';

describe('the slot lead, write by write', () => {
  it('begins at the 50 ms jitter and rises at once to 1.5x a slow write', () => {
    const lead = new SlotLead();
    assert.equal(lead.ms, 50);
    lead.wrote(400);
    assert.equal(lead.ms, 600);
  });

  it('loses a fifth a fast write, down to 1.5x the slowest of the last 16 writes', () => {
    const lead = new SlotLead();
    lead.wrote(400);
    const leads: number[] = [];
    for (let i = 0; i < 16; i++) {
      lead.wrote(10);
      leads.push(lead.ms);
    }
    // a fifth less each time while above the jitter (the slow write still sets no floor above it)
    assert.deepEqual(leads.slice(0, 12), [480, 384, 307, 245, 196, 156, 124, 99, 79, 63, 50, 50]);
    // the 16th fast write pushes the slow one out of the window: the floor is 1.5x 10 ms
    assert.equal(lead.ms, 40);
    for (let i = 0; i < 5; i++) lead.wrote(10);
    assert.equal(lead.ms, 15, 'down to 1.5x the slowest recent write');
  });

  it('keeps its floor at the jitter while one of the last 16 writes was slow', () => {
    const lead = new SlotLead();
    for (let i = 0; i < 20; i++) lead.wrote(4);
    assert.equal(lead.ms, 6);
    lead.wrote(100);
    assert.equal(lead.ms, 150);
    for (let i = 0; i < 15; i++) lead.wrote(4);
    assert.equal(lead.ms, 50, 'the 100 ms write is among the last 16: floor at the jitter');
    lead.wrote(4);
    assert.equal(lead.ms, 40, 'it has left the window: a fifth less again');
  });

  it('doubles after a missed slot, from at least the jitter, to at most 2 s', () => {
    const lead = new SlotLead();
    for (let i = 0; i < 20; i++) lead.wrote(2);
    assert.equal(lead.ms, 3);
    lead.late();
    assert.equal(lead.ms, 50);
    lead.late();
    assert.equal(lead.ms, 100);
    for (let i = 0; i < 10; i++) lead.late();
    assert.equal(lead.ms, 2000);
    lead.wrote(5000);
    assert.equal(lead.ms, 2000, 'a write slower than the cap leaves it at the cap');
  });
});
