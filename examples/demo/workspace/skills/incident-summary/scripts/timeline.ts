#!/usr/bin/env -S deno run --allow-read
// Prints "hh:mm:ss message" lines for every ISO-timestamped line of a log.
const [path] = Deno.args;
if (!path) {
  console.error("usage: timeline.ts LOGFILE");
  Deno.exit(2);
}
const text = await Deno.readTextFile(path);
for (const line of text.split("\n")) {
  const m = line.match(/^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})\S*\s+(.*)$/);
  if (m) console.log(`${m[2]} ${m[3]}`);
}
