from repaudit.cli import main

main()
