
0123456789abcdef
com.example1.2d"quota_exhausted(€€¨±ãŸçË