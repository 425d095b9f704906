import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { alive } from '../../../cli/processes.ts';

describe('alive (cli/processes.ts)', () => {
  it('a running process is alive; an exited one nobody has reaped (a zombie) is not', async (t) => {
    if (process.platform !== 'linux') return t.skip('zombies are read from /proc');
    // The shell starts a short sleep and becomes a long one (exec), which never reaps it: the short
    // sleep stays a zombie, answering signal 0, as an emulator does until a container's init reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 30 >/dev/null'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    t.after(() => parent.kill('SIGKILL'));
    const [line] = (await once(parent.stdout, 'data')) as [Buffer];
    const zombie = Number(line.toString().trim());
    await new Promise((r) => setTimeout(r, 400));
    assert.doesNotThrow(() => process.kill(zombie, 0), 'the zombie still answers signal 0');
    assert.equal(alive(zombie), false);
    assert.equal(alive(parent.pid as number), true, 'the long sleep runs');
  });
});
