#!/usr/bin/env node
"use strict";
require("../launch.js")("acp-mock-agent", { ownSession: false });
