/**
 * Domain names of hosts. With configured TLD lists this is seed 000's algorithm (the
 * `crawlscope.top-level-domains.generic` / `.additional` properties); with both lists null it is
 * the registrable domain (eTLD+1) of the Public Suffix List, ICANN and private sections, via tldts.
 */
import { getDomain } from 'tldts';

export interface DomainLists {
  /** seed 000 `generic`: one-term TLDs such as com, gov, org; null when not configured */
  generic: string[] | null;
  /** seed 000 `additional`: mostly two-term TLDs such as co.uk; null when not configured */
  additional: string[] | null;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The domain name of `host` (a URL is accepted too, its host is used). IP addresses and
 * single-label hosts are their own domain. `log` receives seed 000's DEBUG message.
 */
export function domainOf(host: string, lists: DomainLists, log?: (msg: string) => void): string {
  const name = hostOf(host);
  if (name === '' || name.startsWith('[') || IPV4.test(name) || !name.includes('.')) return name;
  if (lists.generic === null && lists.additional === null) return registrableDomain(name) ?? name;
  return seedDomain(name, lists, (result) =>
    log?.(`Failed to get the domain name for url: ${host} using ${result} as the default domain name`),
  );
}

/** The PSL registrable domain (eTLD+1) of a host name; null for a public suffix itself or a bad name. */
export function registrableDomain(host: string): string | null {
  // PSL test rule: a leading dot is not a host name
  if (host.startsWith('.')) return null;
  return getDomain(host.toLowerCase(), { allowPrivateDomains: true, extractHostname: false });
}

/**
 * Seed 000, step by step: a generic last term gives the last two terms; otherwise the whole host
 * and then each shorter suffix is looked up in the additional list, and a match on suffix S gives
 * the term before S plus S (co.uk matched -> xyz.co.uk); no match gives the last two terms and logs.
 */
function seedDomain(host: string, lists: DomainLists, onDefault: (result: string) => void): string {
  const terms = host.split('.');
  const lastTwo = terms.slice(-2).join('.');
  const generic = new Set((lists.generic ?? []).map(normalizeTld));
  if (generic.has(terms.at(-1)!)) return lastTwo;
  const additional = new Set((lists.additional ?? []).map(normalizeTld));
  for (let i = 0; i < terms.length; i++) {
    if (additional.has(terms.slice(i).join('.'))) return terms.slice(Math.max(i - 1, 0)).join('.');
  }
  onDefault(lastTwo);
  return lastTwo;
}

/** TLD list entries are compared lower-cased and without a leading dot (".co.uk" = "co.uk"). */
function normalizeTld(tld: string): string {
  return tld.trim().toLowerCase().replace(/^\./, '');
}

/** Host name of a host or URL: lower-cased, without port and trailing dot. */
function hostOf(hostOrUrl: string): string {
  let host = hostOrUrl.trim();
  if (host.includes('://')) {
    try {
      host = new URL(host).hostname;
    } catch {
      return host.toLowerCase();
    }
  } else {
    // "[::1]:8080" -> "[::1]", "example.com:8080" -> "example.com"
    host = host.startsWith('[') ? host.replace(/\]:\d*$/, ']') : host.replace(/:\d*$/, '');
  }
  return host.toLowerCase().replace(/\.$/, '');
}
