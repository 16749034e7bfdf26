#!/usr/bin/env node
// Entry point of `aetherctl`: loads the TypeScript sources through tsx in
// this same process (one PID, so Ctrl-C reaches aetherctl directly).
import { register } from "tsx/esm/api";

register();
await import("../clients/aetherctl/main.ts");
