import assert from "node:assert/strict";
import { test } from "node:test";
import { slugify, slugPath } from "../src/slugify.js";

test("ascii titles", () => {
  assert.equal(slugify("Hello, World!"), "hello-world");
  assert.equal(slugify("  many   spaces "), "many-spaces");
});

test("accented titles keep their letters", () => {
  assert.equal(slugify("Crème brûlée"), "creme-brulee");
});

test("paths", () => {
  assert.equal(slugPath(["Docs", "Getting Started"]), "docs/getting-started");
});
