import { main } from "./main.ts";

await main(process.argv);
