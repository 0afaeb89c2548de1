import type { BrowserContext } from "playwright-core";

/** Debian's Chromium, which `.ci/run` installs when it is missing. */
export const CHROMIUM = "/usr/bin/chromium";

/** True when Debian's Chromium is installed; without it browser tests are ignored. */
export const hasChromium: boolean = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();

/** A test name that says, when Chromium is missing, why the test is ignored and how to install it. */
export function browserTest(name: string): string {
  return hasChromium ? name : `${name} (ignored: no ${CHROMIUM}; apt-get install -y chromium)`;
}

/**
 * Headless Chromium with a fresh profile under `dir`, driven by playwright-core;
 * `await using` closes it and removes the profile.
 */
export async function launchChromium(dir: string): Promise<BrowserContext & AsyncDisposable> {
  // playwright-core keeps its artifacts in the temporary directory; keep them under .tmp with the profile.
  Deno.env.set("TMPDIR", await Deno.realPath(dir));
  // Without this, loading playwright-core probes /proc for WSL, which Deno allows only with --allow-all.
  Deno.env.set("__IS_WSL_TEST__", "1");
  const { chromium } = await import("playwright-core");
  const profile = await Deno.makeTempDir({ dir, prefix: "profile-" });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    // Chromium keeps its singleton socket in TMPDIR, whose path must stay short.
    env: { ...Deno.env.toObject(), TMPDIR: "/tmp" },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return Object.assign(context, {
    async [Symbol.asyncDispose]() {
      await context.close();
      await removeProfile(profile);
    },
  });
}

/** Chromium's helper processes may still write to the profile just after the browser exits: try a few times. */
async function removeProfile(profile: string, tries = 5): Promise<void> {
  try {
    await Deno.remove(profile, { recursive: true });
  } catch (error) {
    if (tries <= 1) throw error;
    await new Promise((resolve) => setTimeout(resolve, 100));
    await removeProfile(profile, tries - 1);
  }
}
