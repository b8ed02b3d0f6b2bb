package main

import _ "example.com/m/modex"
