import { main } from "./main.ts";

// No top-level await: the bin runs this as one CommonJS bundle (see scripts/bundle-cli.ts).
main(process.argv).catch((error: unknown) => {
  // main prints every error itself; reaching here is a bug in the error path.
  console.error(error);
  process.exitCode = 1;
});
