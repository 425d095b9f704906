import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowEntryProblem,
  isPrivateAddress,
  privateAllowed,
  resolveGuarded,
} from '../../../shared/net/ip-guard.ts';

describe('isPrivateAddress', () => {
  const refused: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['::1', 'IPv6 loopback'],
    ['[::1]', 'bracketed IPv6 loopback'],
    ['10.1.2.3', 'private 10/8'],
    ['172.16.0.1', 'private 172.16/12 low'],
    ['172.31.255.255', 'private 172.16/12 high'],
    ['192.168.1.1', 'private 192.168/16'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with zone'],
    ['fc00::1', 'unique-local fc00::/7'],
    ['fd12:3456::1', 'unique-local fd'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network 0/8'],
    ['::', 'IPv6 unspecified'],
    ['100.64.0.1', 'CGNAT low'],
    ['100.127.255.254', 'CGNAT high'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback (hex)'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'IPv6 multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['not-an-ip', 'unparseable fails closed'],
    ['', 'empty fails closed'],
  ];
  for (const [ip, label] of refused) {
    it(`refuses ${label} (${ip})`, () => assert.equal(isPrivateAddress(ip), true));
  }

  const allowed = [
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ];
  for (const ip of allowed) {
    it(`allows public ${ip}`, () => assert.equal(isPrivateAddress(ip), false));
  }
});

describe('resolveGuarded', () => {
  it('refuses a resolve override to a private address', async () => {
    await assert.rejects(resolveGuarded('intranet.test', { 'Intranet.Test': '10.0.0.5' }, false), {
      code: 'private-address',
    });
  });
  it('uses a resolve override when private networks are allowed', async () => {
    assert.deepEqual(await resolveGuarded('intranet.test', { 'intranet.test': '10.0.0.5' }, true), [
      '10.0.0.5',
    ]);
  });
  it('takes a key written in Unicode for the punycode host URLs carry (IDN)', async () => {
    assert.deepEqual(await resolveGuarded('xn--bcher-kva.test', { 'Bücher.test': '10.0.0.5' }, true), [
      '10.0.0.5',
    ]);
  });
  it('rejects an override that is not an IP', async () => {
    await assert.rejects(resolveGuarded('a.test', { 'a.test': 'b.test' }, true), { code: 'bad-resolve' });
  });
  it('refuses bracketed literal IPv6 loopback', async () => {
    await assert.rejects(resolveGuarded('[::1]', {}, false), { code: 'private-address' });
  });
});

describe('allowPrivateNetworks as a list of CIDRs, IPs and host names', () => {
  const allow = ['10.1.0.0/16', 'fd00:1::/32', '127.0.0.1', 'Intranet.Test.', 'bücher.test'];
  // biome-ignore format: one case per line
  const cases: [string, string, boolean][] = [
    ['a.test', '10.1.2.3', true], // inside a listed CIDR
    ['a.test', '::ffff:10.1.2.3', true], // IPv4-mapped, compared as IPv4
    ['a.test', '10.2.0.1', false], // outside it
    ['a.test', 'fd00:1::5', true],
    ['a.test', 'fd00:2::5', false],
    ['a.test', '127.0.0.1', true], // a listed IP
    ['a.test', '127.0.0.2', false],
    ['intranet.test', '192.168.1.1', true], // a listed host name, whatever it resolves to
    ['other.test', '192.168.1.1', false],
    ['a.test', '169.254.169.254', false], // cloud metadata: only if listed
    ['xn--bcher-kva.test', '192.168.1.1', true], // listed in Unicode (below), carried as punycode
  ];
  for (const [host, address, allowed] of cases) {
    it(`${host} at ${address}: ${allowed ? 'allowed' : 'refused'}`, () => {
      assert.equal(privateAllowed(host, address, allow), allowed);
    });
  }
  it('true and false keep their meaning', () => {
    assert.equal(privateAllowed('a.test', '10.0.0.1', true), true);
    assert.equal(privateAllowed('a.test', '10.0.0.1', false), false);
  });
  it('resolveGuarded refuses what the list does not name, with the reason', async () => {
    await assert.rejects(resolveGuarded('x.test', { 'x.test': '10.9.9.9' }, allow), {
      code: 'private-address',
      message: /fetch\.allowPrivateNetworks does not list it/,
    });
    assert.deepEqual(await resolveGuarded('x.test', { 'x.test': '10.1.9.9' }, allow), ['10.1.9.9']);
  });
  it('config entries: CIDR, IP or host name, else a reason', () => {
    for (const ok of ['10.0.0.0/8', '::1', '[fd00::1]', 'intranet.test', 'localhost'])
      assert.equal(allowEntryProblem(ok), null, ok);
    for (const bad of ['10.0.0.0/33', 'not a host', 'http://x/']) assert.ok(allowEntryProblem(bad), bad);
  });
});
