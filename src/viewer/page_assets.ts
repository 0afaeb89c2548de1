import html from "./page/index.html" with { type: "text" };
import script from "./page/app.js" with { type: "text" };
import style from "./page/style.css" with { type: "text" };

const ASSETS: Record<string, { body: string; type: string }> = {
  "": { body: html, type: "text/html; charset=utf-8" },
  "index.html": { body: html, type: "text/html; charset=utf-8" },
  "app.js": { body: script, type: "text/javascript; charset=utf-8" },
  "style.css": { body: style, type: "text/css; charset=utf-8" },
};

/** The viewer page's file `name` (the page itself for `""`), or 404. */
export function pageAsset(name: string): Response {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return new Response("not found", { status: 404 });
  return new Response(asset.body, {
    headers: {
      "content-type": asset.type,
      "cache-control": "no-cache",
      "content-security-policy":
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
    },
  });
}
