#!/usr/bin/env node
// Entry point of `aether-registrar`: loads the TypeScript sources through tsx
// in this same process (one PID, signals reach the registrar directly).
import { register } from "tsx/esm/api";

register();
await import("../services/registrar/main.ts");
