#!/usr/bin/env node
import { run } from './index';

// The exit code once the output is flushed (process.exitCode, not process.exit()).
void run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
