#!/usr/bin/env node
// Entry point of `aether-agent`: loads the TypeScript sources through tsx
// in this same process (one PID, signals reach the agent directly).
import { register } from "tsx/esm/api";

register();
await import("../clients/agent/main.ts");
