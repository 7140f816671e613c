#!/usr/bin/env node
// Kept as plain JavaScript so the command exists (and is executable) before the first build.
import '../dist/main.js';
