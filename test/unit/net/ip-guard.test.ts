import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPrivateAddress, refusePrivateLiteral, resolveGuarded } from '../../../shared/net/ip-guard.ts';

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
    await assert.rejects(resolveGuarded('intranet.test', { 'Intranet.Test': '10.0.0.5' }, true), {
      code: 'private-address',
    });
  });
  it('uses a resolve override when private networks are allowed', async () => {
    assert.deepEqual(await resolveGuarded('intranet.test', { 'intranet.test': '10.0.0.5' }, false), [
      '10.0.0.5',
    ]);
  });
  it('rejects an override that is not an IP', async () => {
    await assert.rejects(resolveGuarded('a.test', { 'a.test': 'b.test' }, false), { code: 'bad-resolve' });
  });
  it('refuses bracketed literal IPv6 loopback', async () => {
    await assert.rejects(resolveGuarded('[::1]', {}, true), { code: 'private-address' });
  });
  it('refusePrivateLiteral ignores names and refuses private literals', () => {
    assert.doesNotThrow(() => refusePrivateLiteral('example.test'));
    assert.throws(() => refusePrivateLiteral('169.254.169.254'), { code: 'private-address' });
  });
});
