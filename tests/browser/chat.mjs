// Chat in Mneme's playground with Debian's headless Chromium (playwright-core, no browser download).
// usage: node chat.mjs URL SCREENSHOT_PATH [KEY]
// Types a message, waits for the reply, opens a new thread, asks about it, and prints what it saw as JSON.
import { chromium } from "playwright-core";

const [url, screenshot, key] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-dev-shm-usage"],
});
const result = { steps: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.setDefaultTimeout(60000);
  await page.goto(url + "/agent/playground/");
  await page.waitForFunction(() => document.getElementById("mode").textContent.length > 0);
  result.mode = await page.textContent("#mode");
  result.userShown = await page.isVisible("#user");
  result.keyShown = await page.isVisible("#key");
  if (key) await page.fill("#key", key);

  async function say(text) {
    const done = ".msg.assistant:not(.pending)";
    const before = await page.locator(done).count();
    await page.fill("#message", text);
    await page.press("#message", "Enter");
    await page.waitForFunction(
      ([n, sel]) => document.querySelectorAll(sel).length > n || document.getElementById("error").textContent,
      [before, done]);
    const replies = await page.locator(done).allTextContents();
    return {
      said: text,
      reply: replies.length > before ? replies[replies.length - 1] : null,
      error: await page.textContent("#error"),
      thread: await page.textContent("#thread"),
      shown: await page.locator(".msg").allTextContents(),
    };
  }

  result.steps.push(await say("我养了一只叫豆豆的猫，它是橘猫"));
  result.steps.push(await say("它今年三岁了"));
  await page.screenshot({ path: screenshot.replace(/\.png$/, "-first-thread.png") });
  await page.click("#new-thread");
  result.afterNewThread = await page.textContent("#thread");
  result.steps.push(await say("我的猫叫什么名字？"));
  await page.screenshot({ path: screenshot, fullPage: false });
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
