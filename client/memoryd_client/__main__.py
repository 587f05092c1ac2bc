from memoryd_client.cli import finish, main

finish(main())
