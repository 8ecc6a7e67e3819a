import { existsSync, readdirSync } from 'node:fs'

/**
 * The host's /etc entries that the programs under /usr need inside a sandbox, bind-mounted
 * read-only beside /usr by both backends:
 * - `/etc/alternatives`: Debian's alternatives (`/usr/bin/awk`, `which`, `cc`, `c++`, `java`,
 *   numpy's `libblas.so.3` and `liblapack.so.3` are links through it);
 * - `/etc/ld.so.cache`: the dynamic loader's index of the library folders;
 * - `/etc/java-*`: the JDK's configuration (`lib/jvm.cfg`, `conf/security`) are links into it.
 * Nothing else of the host's /etc is visible (no passwd, hosts, ssh or ssl keys).
 * @returns the absolute paths that exist on this host, sorted.
 */
export function hostEtcPaths(): string[] {
  const paths = ['/etc/alternatives', '/etc/ld.so.cache']
  let names: string[] = []
  try {
    names = readdirSync('/etc')
  } catch {
    // no /etc to read: nothing to bind
  }
  for (const n of names) if (/^java-\d+-openjdk$/.test(n)) paths.push(`/etc/${n}`)
  return paths.filter((p) => existsSync(p)).sort()
}
