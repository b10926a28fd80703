#!/usr/bin/env node
"use strict";
require("../launch.js")("acp-question-bridge", { ownSession: true });
