#!/usr/bin/env node
'use strict';
/*
 * The `floodgate` command. A file of its own, not dist/cli.js itself: npm links a workspace's bin when it
 * installs, and in a fresh clone dist/ does not exist yet, so a bin pointing into it would never be linked.
 */
try {
  require('../dist/cli.js');
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes('cli.js')) {
    console.error('floodgate: @floodgate/cli is not built: run `npm run build` (or `npm start`) in the repository first');
    process.exitCode = 1;
  } else {
    throw error;
  }
}
