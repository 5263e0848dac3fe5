// Opens one visualisation password page (/confirm/{id}) in a real chromium, as the user whose
// MCP client got a URL-mode elicitation: checks that it names the action in plain words, types
// the password and confirms. Run by tests/e2e/visu_page.py (not by browser.sh: it needs a
// pending command); prints "page done" on success.
//
// usage: node visu-page.mjs URL PASSWORD EXPECTED_TEXT
import { expect, finish, launch, screenshot, step } from "./lib.mjs";

const [url, password, expected] = process.argv.slice(2);
const { page, problems, close } = await launch({ width: 420, height: 760, mobile: true });
try {
  await step("the page names the action and takes the password", async () => {
    const res = await page.goto(url);
    expect(res.status() === 200, "status " + res.status());
    const h = res.headers();
    expect(h["cache-control"] === "no-store", "no-store: " + h["cache-control"]);
    expect((h["content-security-policy"] || "").includes("frame-ancestors 'none'"), "CSP");
    const q = await page.textContent("#question");
    expect(q.includes(expected), "question: " + q);
    await screenshot(page, "visu-01-page");
    await page.fill("#password", password);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.click("#confirm"),
    ]);
    expect(answer.status() === 200, "POST answered " + answer.status() + ": " + (await answer.text()).slice(0, 200));
    await page.waitForSelector("#done");
    const done = await page.textContent("#done");
    expect(/handed/.test(done), "done: " + done);
    expect(!(await page.content()).includes(password), "the password is not shown back");
    await screenshot(page, "visu-02-done");
    expect(problems.length === 0, "console/page problems: " + problems.join("; "));
  });
  await step("the page is used up: reloading it answers 404", async () => {
    const res = await page.goto(url);
    expect(res.status() === 404, "status " + res.status());
  });
} finally {
  await close();
}
finish("page done");
