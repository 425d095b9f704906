/** Reading a config file: JSON or YAML by extension, every error a ConfigError naming the file. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfigFile } from '../../../cli/config-file.ts';
import { ConfigError } from '../../../shared/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'trawl-config-file-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
function refused(path: string, pattern: RegExp): void {
  assert.throws(
    () => loadConfigFile(path),
    (e: unknown) => e instanceof ConfigError && e.message.startsWith(`${path}: `) && pattern.test(e.message),
  );
}

describe('loadConfigFile', () => {
  it('reads one YAML document, with or without its --- line', () => {
    const text = 'name: yaml-one\nstartUrls: ["http://x.test/"]\n';
    assert.equal(loadConfigFile(file('a.yaml', text)).name, 'yaml-one');
    assert.equal(loadConfigFile(file('b.yml', `---\n${text}`)).startUrls[0], 'http://x.test/');
  });

  it('refuses a second YAML document, naming the line it begins at', () => {
    const path = file('two.yaml', 'name: a\nstartUrls: ["http://x.test/"]\n---\nname: b\n');
    refused(path, /not valid YAML: a config is one YAML document; a second begins at line 3/);
  });

  it('refuses YAML that does not parse, and an empty file of either kind', () => {
    refused(file('bad.yaml', 'name: a\nstartUrls: [x\n'), /not valid YAML: .*line 3/s);
    refused(file('empty.yaml', ''), /the config file is empty$/);
    refused(file('comments.yaml', '# nothing yet\n'), /the config file is empty$/);
    refused(file('empty.json', ''), /not valid JSON/);
  });

  it('reads a JSON or YAML file that starts with a byte order mark', () => {
    const json = '\uFEFF{"name": "bom", "startUrls": ["http://x.test/"]}';
    assert.equal(loadConfigFile(file('bom.json', json)).name, 'bom');
    assert.equal(
      loadConfigFile(file('bom.yaml', '\uFEFFname: bom-yaml\nstartUrls: ["http://x.test/"]\n')).name,
      'bom-yaml',
    );
  });

  it('names a file it cannot read', () => {
    refused(join(dir, 'missing.json'), /cannot read the config file \(ENOENT\)/);
  });
});
